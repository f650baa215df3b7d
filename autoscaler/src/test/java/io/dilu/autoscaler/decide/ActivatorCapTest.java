package io.dilu.autoscaler.decide;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.Readings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

class ActivatorCapTest {

    static final List<FieldError> PROBLEMS = new ArrayList<>();
    static final Readings ABSURD = new Readings(0, 0, OptionalDouble.empty(), OptionalDouble.empty(), 999_999, 999_999);

    @Test
    void knativesClassIsCappedOnItsMetricAtWhatMaxScalePodsCarryAtTheirTarget() {
        Knobs kpa = Knobs.kpa(Map.of(KnativeNames.MAX_SCALE, "10", KnativeNames.TARGET, "10"), 0,
                KnativeAutoscalerConfig.DEFAULTS, true, PROBLEMS);
        Readings r = ActivatorCap.capped(ABSURD, kpa);
        assertThat(r.activatorConcurrency()).isEqualTo(100);
        assertThat(r.activatorRps()).as("not the metric scaled by: not in its unit").isEqualTo(999_999);
        Knobs byRps = Knobs.kpa(Map.of(KnativeNames.MAX_SCALE, "10", KnativeNames.METRIC, "rps",
                KnativeNames.TARGET, "50"), 0, KnativeAutoscalerConfig.DEFAULTS, true, PROBLEMS);
        assertThat(ActivatorCap.capped(ABSURD, byRps).activatorRps()).isEqualTo(500);
    }

    @Test
    void withoutMaxScaleTheCapIsKnativesUnboundedScale() {
        Knobs kpa = Knobs.kpa(Map.of(KnativeNames.TARGET, "10"), 0, KnativeAutoscalerConfig.DEFAULTS, true, PROBLEMS);
        assertThat(ActivatorCap.capped(ABSURD, kpa).activatorConcurrency()).isEqualTo(1000 * 10);
    }

    @Test
    void dilusClassIsCappedOnTheRateAtItsServingRate() {
        Knobs lazy = Knobs.lazy(Map.of(KnativeNames.MAX_SCALE, "4"), KnativeAutoscalerConfig.DEFAULTS, 40,
                new InstanceRate(25, "test"), true, true, PROBLEMS);
        Readings r = ActivatorCap.capped(ABSURD, lazy);
        assertThat(r.activatorRps()).isEqualTo(100);
        assertThat(r.activatorConcurrency()).isEqualTo(999_999);
        Readings small = new Readings(1, 0, OptionalDouble.of(3), OptionalDouble.of(1), 7, 2);
        assertThat(ActivatorCap.capped(small, lazy)).as("what is below the cap is left alone").isEqualTo(small);
    }
}
