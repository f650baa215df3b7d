package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class AutoscaleTest {

    static final ScalingParameters PAPER = ScalingParameters.DEFAULTS;
    static final Instant T0 = Instant.parse("2026-11-22T10:00:00Z");
    static final ScaleBounds FREE = ScaleBounds.of(Map.of());

    static double[] window(double rps, int n) {
        double[] w = new double[n];
        Arrays.fill(w, rps);
        return w;
    }

    static Autoscale.Output decide(double[] samples, int current, ScaleBounds bounds, Optional<Instant> zeroSince, Instant now) {
        return Autoscale.decide(PAPER, new Autoscale.Input(samples, current, 10, bounds, true, Duration.ofSeconds(30), zeroSince, now));
    }

    @Test
    void aNewRevisionStartsAtItsInitialScale() {
        assertThat(decide(new double[0], -1, ScaleBounds.of(Map.of(ScaleBounds.INITIAL, "3")), Optional.empty(), T0).desired()).isEqualTo(3);
        assertThat(decide(new double[0], -1, FREE, Optional.empty(), T0).desired()).isEqualTo(1);
    }

    @Test
    void sustainedLoadScalesOutAndATenSecondBurstDoesNot() {
        double[] burst = window(5, 40);
        Arrays.fill(burst, 30, 40, 40);
        assertThat(decide(burst, 1, FREE, Optional.empty(), T0).desired()).isEqualTo(1);
        double[] sustained = window(5, 40);
        Arrays.fill(sustained, 15, 40, 25);
        Autoscale.Output out = decide(sustained, 1, FREE, Optional.empty(), T0);
        assertThat(out.desired()).isEqualTo(3);
        assertThat(out.reason()).isEqualTo(ScaleDecision.Reason.SCALE_OUT);
    }

    @Test
    void maxScaleCapsAndMinScaleFloors() {
        ScaleBounds bounds = ScaleBounds.of(Map.of(ScaleBounds.MIN, "2", ScaleBounds.MAX, "4"));
        assertThat(decide(window(100, 40), 2, bounds, Optional.empty(), T0).desired()).isEqualTo(4);
        assertThat(decide(window(0, 40), 3, bounds, Optional.empty(), T0).desired()).isEqualTo(2);
    }

    @Test
    void zeroOnlyAfterTheGracePeriodAndNeverWithMinScale() {
        Autoscale.Output first = decide(window(0, 40), 2, FREE, Optional.empty(), T0);
        assertThat(first.desired()).as("one stays warm during the grace").isEqualTo(1);
        assertThat(first.zeroWantedSince()).contains(T0);
        assertThat(decide(window(0, 40), 1, FREE, first.zeroWantedSince(), T0.plusSeconds(29)).desired()).isEqualTo(1);
        assertThat(decide(window(0, 40), 1, FREE, first.zeroWantedSince(), T0.plusSeconds(30)).desired()).isZero();
        Autoscale.Output noZero = Autoscale.decide(PAPER, new Autoscale.Input(window(0, 40), 1, 10, FREE, false,
                Duration.ofSeconds(30), Optional.of(T0), T0.plusSeconds(600)));
        assertThat(noZero.desired()).as("scale to zero disabled").isEqualTo(1);
        Autoscale.Output again = decide(window(3, 40), 1, FREE, first.zeroWantedSince(), T0.plusSeconds(10));
        assertThat(again.zeroWantedSince()).as("traffic resets the timer").isEmpty();
    }

    @Test
    void malformedBoundsAreReportedAndReadAsDefaults() {
        List<FieldError> problems = new ArrayList<>();
        ScaleBounds b = ScaleBounds.of(Map.of(ScaleBounds.MIN, "-1", ScaleBounds.MAX, "lots", ScaleBounds.INITIAL, "2"), problems);
        assertThat(b).isEqualTo(new ScaleBounds(0, 1000, 2));
        assertThat(problems).extracting(FieldError::message).containsExactlyInAnyOrder(
                "autoscaling.knative.dev/min-scale=-1 is not allowed: must be an integer in 0..1000",
                "autoscaling.knative.dev/max-scale=lots is not allowed: must be an integer in 0..1000");
    }
}
