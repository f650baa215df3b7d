package io.dilu.autoscaler;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.activator.ActivatorConfig;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.ScalingParameters;
import io.dilu.testing.ShippedConfig;
import io.smallrye.config.SmallRyeConfig;
import java.util.ArrayList;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The autoscaler ships core's lazy-scaling defaults and Knative's names, and a key it is given overrides that key alone. */
class AutoscalerConfigTest {

    /** The configuration as the application reads it (no profile): its defaults and application.properties, over {@code keys}. */
    static SmallRyeConfig read(Map<String, String> keys) {
        return ShippedConfig.withProperties(keys, AutoscalerConfig.class, ActivatorConfig.class);
    }

    @Test
    void asShippedLazyScalingIsCoresAndTheNamesAreKnatives() {
        SmallRyeConfig shipped = read(Map.of());
        AutoscalerConfig config = shipped.getConfigMapping(AutoscalerConfig.class);
        assertThat(config.lazyScaling()).isEqualTo(ScalingParameters.DEFAULTS);
        assertThat(config.scaleToZero(KnativeAutoscalerConfig.DEFAULTS)).as("installed alongside Knative's autoscaler")
                .isEqualTo(Boolean.parseBoolean(Autoscale.DEFAULT_SCALE_TO_ZERO));
        assertThat(config.knativeNamespace()).isEqualTo(KnativeNames.SERVING_NAMESPACE);
        assertThat(shipped.getConfigMapping(ActivatorConfig.class).podLabel()).isEqualTo(KnativeNames.ACTIVATOR_POD_LABEL);
    }

    @Test
    void eachKnobGivenReplacesThatKnobOnlyAndTheBurstGuardFollowsTheWindow() {
        ScalingParameters d = ScalingParameters.DEFAULTS;
        assertThat(read(Map.of("dilu.autoscaler.phi-out", "25")).getConfigMapping(AutoscalerConfig.class).lazyScaling())
                .isEqualTo(new ScalingParameters(d.windowSeconds(), 25, d.phiIn(), d.minScale(), d.maxScale(),
                        d.burstWindowSeconds()));
        assertThat(read(Map.of("dilu.autoscaler.window-samples", "60", "dilu.autoscaler.phi-out", "30",
                "dilu.autoscaler.phi-in", "45")).getConfigMapping(AutoscalerConfig.class).lazyScaling())
                .isEqualTo(new ScalingParameters(60, 30, 45, d.minScale(), d.maxScale(), 6));
    }

    @Test
    void replacingKnativesAutoscalerFollowsTheClustersScaleToZero() {
        AutoscalerConfig replace = read(Map.of("dilu.autoscaler.mode", "replace")).getConfigMapping(AutoscalerConfig.class);
        assertThat(replace.scaleToZero(KnativeAutoscalerConfig.DEFAULTS)).isTrue();
        assertThat(replace.scaleToZero(KnativeAutoscalerConfig.parse(Map.of("enable-scale-to-zero", "false"), new ArrayList<>())))
                .isFalse();
        assertThat(read(Map.of("dilu.autoscaler.enable-scale-to-zero", "true")).getConfigMapping(AutoscalerConfig.class)
                .scaleToZero(KnativeAutoscalerConfig.DEFAULTS)).as("set by hand, alongside").isTrue();
    }
}
