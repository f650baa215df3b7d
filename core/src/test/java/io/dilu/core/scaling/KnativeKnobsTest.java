package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** Knative's per-revision timing knobs: Go durations, the annotations, the window's thresholds, the scale-down delay. */
class KnativeKnobsTest {

    @Test
    void goDurationsParseAsGoParsesThem() {
        assertThat(GoDuration.parse("60s")).isEqualTo(Duration.ofSeconds(60));
        assertThat(GoDuration.parse("1m30s")).isEqualTo(Duration.ofSeconds(90));
        assertThat(GoDuration.parse("1.5h")).isEqualTo(Duration.ofMinutes(90));
        assertThat(GoDuration.parse("250ms")).isEqualTo(Duration.ofMillis(250));
        assertThat(GoDuration.parse("0")).isEqualTo(Duration.ZERO);
        for (String bad : new String[] {"", "60", "-5s", "1d", "s", "5s3", "1e3s", "999999999h"}) {
            assertThatThrownBy(() -> GoDuration.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void theAnnotationsAreReadInKnativesRangesAndBadOnesReported() {
        List<FieldError> problems = new ArrayList<>();
        ScalingAnnotations a = ScalingAnnotations.of(Map.of(KnativeNames.WINDOW, "60s",
                KnativeNames.SCALE_DOWN_DELAY, "2m", KnativeNames.SCALE_TO_ZERO_POD_RETENTION, "1m"), problems);
        assertThat(a).isEqualTo(new ScalingAnnotations(OptionalInt.of(60), Optional.of(Duration.ofMinutes(2)), Optional.of(Duration.ofMinutes(1))));
        assertThat(problems).isEmpty();
        assertThat(ScalingAnnotations.of(Map.of(), problems))
                .isEqualTo(new ScalingAnnotations(OptionalInt.empty(), Optional.empty(), Optional.empty()));
        ScalingAnnotations bad = ScalingAnnotations.of(Map.of(KnativeNames.WINDOW, "5s",
                KnativeNames.SCALE_DOWN_DELAY, "2h", KnativeNames.SCALE_TO_ZERO_POD_RETENTION, "soon"), problems);
        assertThat(bad).isEqualTo(new ScalingAnnotations(OptionalInt.empty(), Optional.empty(), Optional.empty()));
        assertThat(problems).extracting(FieldError::message).containsExactlyInAnyOrder(
                "autoscaling.knative.dev/window=5s is not allowed: must be a duration in 6s..1h, e.g. 60s",
                "autoscaling.knative.dev/scale-down-delay=2h is not allowed: must be a duration in 0s..1h, e.g. 5m",
                "autoscaling.knative.dev/scale-to-zero-pod-retention-period=soon is not allowed: must be a duration in 0s..1h, e.g. 1m");
    }

    @Test
    void aLongerWindowKeepsThePapersThresholdsInProportion() {
        ScalingParameters paper = ScalingParameters.DEFAULTS;
        assertThat(paper.withWindow(40)).isSameAs(paper);
        ScalingParameters sixty = paper.withWindow(60);
        assertThat(sixty.windowSeconds()).isEqualTo(60);
        assertThat(sixty.phiOut()).isEqualTo(30);
        assertThat(sixty.phiIn()).isEqualTo(45);
        for (int w = 6; w <= 3600; w++) {
            ScalingParameters p = paper.withWindow(w); // the constructor refuses thresholds that could flap
            assertThat(p.phiOut() + p.phiIn()).isGreaterThan(w);
        }
    }

    @Test
    void aLowerScaleIsAppliedOnlyOnceWantedForTheWholeDelay() {
        ScaleDownDelay delay = new ScaleDownDelay();
        Instant t0 = Instant.parse("2026-11-24T00:00:00Z");
        Duration d = Duration.ofSeconds(30);
        assertThat(delay.apply(t0, 5, d)).isEqualTo(5);
        assertThat(delay.apply(t0.plusSeconds(10), 3, d)).as("held").isEqualTo(5);
        assertThat(delay.apply(t0.plusSeconds(20), 4, d)).isEqualTo(5);
        assertThat(delay.apply(t0.plusSeconds(30), 3, d)).as("5 was last wanted 30 s ago").isEqualTo(4);
        assertThat(delay.apply(t0.plusSeconds(35), 8, d)).as("up at once").isEqualTo(8);
        assertThat(delay.apply(t0.plusSeconds(64), 1, d)).isEqualTo(8);
        assertThat(delay.apply(t0.plusSeconds(65), 1, d)).isEqualTo(1);
        ScaleDownDelay none = new ScaleDownDelay();
        assertThat(none.apply(t0, 5, Duration.ZERO)).isEqualTo(5);
        assertThat(none.apply(t0.plusSeconds(1), 2, Duration.ZERO)).as("no delay: at once").isEqualTo(2);
    }
}
