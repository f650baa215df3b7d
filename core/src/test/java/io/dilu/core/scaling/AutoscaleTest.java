package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.KnativeNames;
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

    static final ScalingParameters PAPER = ScalingParameters.PAPER;
    static final Instant T0 = Instant.parse("2026-11-22T10:00:00Z");
    static final ScaleBounds FREE = ScaleBounds.of(Map.of());

    static double[] window(double rps, int n) {
        double[] w = new double[n];
        Arrays.fill(w, rps);
        return w;
    }

    static Autoscale.Output decide(double[] samples, int current, ScaleBounds bounds, Optional<Instant> zeroSince, Instant now) {
        return Autoscale.decide(PAPER, new Autoscale.Input(samples, new double[0], current, 10, Double.POSITIVE_INFINITY,
                bounds, true, Duration.ofSeconds(30), zeroSince, Optional.empty(), now));
    }

    @Test
    void aNewRevisionStartsAtItsInitialScale() {
        assertThat(decide(new double[0], -1, ScaleBounds.of(Map.of(KnativeNames.INITIAL_SCALE, "3")), Optional.empty(), T0).desired()).isEqualTo(3);
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
    void aBurstBeyondTheLimitsScalesOutAtOnceWithTheShippedDefaults() {
        double[] samples = window(5, 40);
        Arrays.fill(samples, 36, 40, 50); // 4 s at 50 rps: one instance serves 10 at its request, 20 at its limit
        Autoscale.Output out = Autoscale.decide(ScalingParameters.DEFAULTS, new Autoscale.Input(samples,
                window(50, 4), 1, 10, 20, FREE, true, Duration.ofSeconds(30), Optional.empty(), Optional.empty(), T0));
        assertThat(out.desired()).as("⌈50/10⌉ at the request rate").isEqualTo(5);
        assertThat(out.reason()).isEqualTo(ScaleDecision.Reason.BURST_OUT);
        assertThat(out.burstOutAt()).as("remembered, so scale-in waits for evidence after it").contains(T0);
        Autoscale.Output next = Autoscale.decide(ScalingParameters.DEFAULTS, new Autoscale.Input(window(5, 40),
                window(5, 4), 5, 10, 20, FREE, true, Duration.ofSeconds(30), Optional.empty(), out.burstOutAt(),
                T0.plusSeconds(1)));
        assertThat(next.desired()).as("a window of low rates a second later does not take them away").isEqualTo(5);
        assertThat(decide(samples, 1, FREE, Optional.empty(), T0).desired()).as("the paper's rule waits").isEqualTo(1);
    }

    @Test
    void maxScaleCapsAndMinScaleFloors() {
        ScaleBounds bounds = ScaleBounds.of(Map.of(KnativeNames.MIN_SCALE, "2", KnativeNames.MAX_SCALE, "4"));
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
        Autoscale.Output noZero = Autoscale.decide(PAPER, new Autoscale.Input(window(0, 40), new double[0], 1, 10,
                Double.POSITIVE_INFINITY, FREE, false, Duration.ofSeconds(30), Optional.of(T0), Optional.empty(),
                T0.plusSeconds(600)));
        assertThat(noZero.desired()).as("scale to zero disabled").isEqualTo(1);
        Autoscale.Output again = decide(window(3, 40), 1, FREE, first.zeroWantedSince(), T0.plusSeconds(10));
        assertThat(again.zeroWantedSince()).as("traffic resets the timer").isEmpty();
    }

    @Test
    void malformedBoundsAreReportedAndReadAsDefaults() {
        List<FieldError> problems = new ArrayList<>();
        ScaleBounds b = ScaleBounds.of(Map.of(KnativeNames.MIN_SCALE, "-1", KnativeNames.MAX_SCALE, "lots", KnativeNames.INITIAL_SCALE, "2"), problems);
        assertThat(b).isEqualTo(new ScaleBounds(0, 1000, 2));
        assertThat(problems).extracting(FieldError::message).containsExactlyInAnyOrder(
                "autoscaling.knative.dev/min-scale=-1 is not allowed: must be an integer in 0..1000",
                "autoscaling.knative.dev/max-scale=lots is not allowed: must be an integer in 0..1000");
    }
}
