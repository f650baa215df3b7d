package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class KnativeAutoscalerConfigTest {

    @Test
    void anEmptyConfigMapHasKnativesDefaults() {
        List<FieldError> problems = new ArrayList<>();
        KnativeAutoscalerConfig c = KnativeAutoscalerConfig.parse(Map.of(), problems);
        assertThat(problems).isEmpty();
        assertThat(c).isEqualTo(KnativeAutoscalerConfig.DEFAULTS);
        assertThat(c.enableScaleToZero()).isTrue();
        assertThat(c.containerConcurrencyTargetFraction()).isEqualTo(0.7);
        assertThat(c.stableWindow()).isEmpty();
        assertThat(c.kpaStableWindow()).isEqualTo(Duration.ofSeconds(60));
        assertThat(c.targetBurstCapacity()).isEqualTo(211);
    }

    @Test
    void readsEveryKeyItIsGiven() {
        List<FieldError> problems = new ArrayList<>();
        KnativeAutoscalerConfig c = KnativeAutoscalerConfig.parse(Map.ofEntries(
                Map.entry("enable-scale-to-zero", "false"), Map.entry("container-concurrency-target-percentage", "80"),
                Map.entry("container-concurrency-target-default", "50"), Map.entry("requests-per-second-target-default", "150"),
                Map.entry("max-scale-up-rate", "10"), Map.entry("max-scale-down-rate", "4"),
                Map.entry("target-burst-capacity", "-1"), Map.entry("panic-window-percentage", "20"),
                Map.entry("activator-capacity", "50"), Map.entry("panic-threshold-percentage", "300"),
                Map.entry("stable-window", "2m"), Map.entry("scale-to-zero-grace-period", "45s"),
                Map.entry("scale-to-zero-pod-retention-period", "1m"), Map.entry("scale-down-delay", "15s"),
                Map.entry("allow-zero-initial-scale", "true"), Map.entry("initial-scale", "0"),
                Map.entry("min-scale", "1"), Map.entry("max-scale", "9")), problems);
        assertThat(problems).isEmpty();
        assertThat(c).isEqualTo(new KnativeAutoscalerConfig(false, 0.8, 50, 150, 10, 4, -1, 20, 50, 300,
                Optional.of(Duration.ofMinutes(2)), Duration.ofSeconds(45), Duration.ofMinutes(1), Duration.ofSeconds(15),
                true, 0, 1, 9));
    }

    @Test
    void aBadKeyIsReportedByNameAndRangeAndKeepsItsDefaultAlone() {
        List<FieldError> problems = new ArrayList<>();
        KnativeAutoscalerConfig c = KnativeAutoscalerConfig.parse(Map.of("max-scale-down-rate", "1", "stable-window", "1.5s",
                "panic-threshold-percentage", "lots", "initial-scale", "0", "target-burst-capacity", "-2",
                "enable-scale-to-zero", "yes", "requests-per-second-target-default", "120"), problems);
        assertThat(problems).extracting(FieldError::field).containsExactlyInAnyOrder("max-scale-down-rate", "stable-window",
                "panic-threshold-percentage", "initial-scale", "target-burst-capacity", "enable-scale-to-zero");
        assertThat(problems).filteredOn(p -> p.field().equals("initial-scale")).singleElement()
                .extracting(FieldError::message).asString().contains("allow-zero-initial-scale");
        assertThat(problems).filteredOn(p -> p.field().equals("max-scale-down-rate")).singleElement()
                .extracting(FieldError::allowed).isEqualTo("a number > 1");
        assertThat(c.maxScaleDownRate()).isEqualTo(2);
        assertThat(c.stableWindow()).isEmpty();
        assertThat(c.panicThresholdPercentage()).isEqualTo(200);
        assertThat(c.initialScale()).isEqualTo(1);
        assertThat(c.targetBurstCapacity()).isEqualTo(211);
        assertThat(c.enableScaleToZero()).isTrue();
        assertThat(c.rpsTargetDefault()).as("a good key beside bad ones is still read").isEqualTo(120);
    }

    @Test
    void minScaleAboveMaxScaleIsRefused() {
        List<FieldError> problems = new ArrayList<>();
        KnativeAutoscalerConfig c = KnativeAutoscalerConfig.parse(Map.of("min-scale", "5", "max-scale", "3"), problems);
        assertThat(problems).extracting(FieldError::field).containsExactly("min-scale");
        assertThat(c.minScale()).isZero();
        assertThat(c.maxScale()).isEqualTo(3);
    }

    @Test
    void activatorsFollowKnativesRule() {
        KnativeAutoscalerConfig c = KnativeAutoscalerConfig.DEFAULTS; // activator-capacity 100
        assertThat(c.activators(0, 100, 211)).as("ceil(211/100)").isEqualTo(3);
        assertThat(c.activators(5, 100, 211)).as("ceil((500+211)/100)").isEqualTo(8);
        assertThat(c.activators(5, 100, 0)).as("activator out of the path").isEqualTo(2);
        assertThat(c.activators(1, 10, -1)).as("unlimited burst counts no extra").isEqualTo(2);
        assertThat(c.activators(0, 10, 50)).as("never fewer than two").isEqualTo(2);
    }
}
