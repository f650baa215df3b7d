package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The KPA baseline against the behaviour Knative's documentation describes, example by example. */
class KnativePodAutoscalerTest {

    static final Instant T0 = Instant.parse("2026-11-23T12:00:00Z");
    final KnativePodAutoscaler kpa = new KnativePodAutoscaler(KnativePodAutoscaler.Parameters.defaults(10));

    int steady(double load, int ready) {
        return kpa.decide(load, load, ready, KnativePodAutoscaler.State.INITIAL, T0).desired();
    }

    /**
     * "Configuring targets": with a per-pod target of 10 and a target utilization of 70%, the autoscaler adds
     * a replica once the average load per replica passes 7.
     */
    @Test
    void aReplicaIsAddedOnceTheAverageLoadPassesSeventyPercentOfTheTarget() {
        assertThat(steady(7.0, 1)).isEqualTo(1);
        assertThat(steady(7.5, 1)).isEqualTo(2);
        assertThat(steady(14.0, 2)).isEqualTo(2);
        assertThat(steady(100, 10)).as("100 / (10 × 0.7) = 14.3").isEqualTo(15);
    }

    /** "Panic mode threshold": 200% starts panic when traffic is twice what the current replicas can handle. */
    @Test
    void panicBeginsAtTwiceWhatTheReadyPodsCarryAndNeverScalesDown() {
        var below = kpa.decide(7, 27.9, 2, KnativePodAutoscaler.State.INITIAL, T0);
        assertThat(below.panicking()).isFalse();
        assertThat(below.desired()).as("stable mode: the 60 s average asks for one pod").isEqualTo(1);
        var over = kpa.decide(7, 28, 2, KnativePodAutoscaler.State.INITIAL, T0);
        assertThat(over.panicking()).isTrue();
        assertThat(over.desired()).as("sized for the panic window: 28 / 7").isEqualTo(4);

        // The burst passes: still panicking, and the count does not go down.
        var after = kpa.decide(7, 3, 4, over.next(), T0.plusSeconds(30));
        assertThat(after.panicking()).isTrue();
        assertThat(after.desired()).isEqualTo(4);
        // A whole stable window (60 s) without a reason to panic ends it; stable mode then halves at most.
        var calm = kpa.decide(7, 3, 4, after.next(), T0.plusSeconds(60));
        assertThat(calm.panicking()).isFalse();
        assertThat(calm.desired()).as("the scale-down rate 2 allows 4 → 2, not 4 → 1").isEqualTo(2);
        // A new reason while panicking starts the stable window again.
        var again = kpa.decide(7, 60, 4, after.next(), T0.plusSeconds(50));
        assertThat(again.panicking()).isTrue();
        assertThat(kpa.decide(7, 3, 9, again.next(), T0.plusSeconds(100)).panicking()).isTrue();
    }

    /** "Scale rates": up to maxScaleUpRate × N and down to N / maxScaleDownRate per evaluation; ±1 always. */
    @Test
    void scaleRatesBoundEachEvaluationButAlwaysAllowOnePod() {
        var slowUp = new KnativePodAutoscaler(new KnativePodAutoscaler.Parameters(10, 0.7, Duration.ofSeconds(60), 10,
                200, 2.0, 2.0, Duration.ofSeconds(30), 0, 1000));
        assertThat(slowUp.decide(700, 70, 5, KnativePodAutoscaler.State.INITIAL, T0).desired())
                .as("N → 2N at most").isEqualTo(10);
        assertThat(steady(0.1, 8)).as("N → N/2 at most").isEqualTo(4);
        assertThat(slowUp.decide(14, 14, 1, KnativePodAutoscaler.State.INITIAL, T0).desired()).isEqualTo(2);
        assertThat(steady(0.1, 1)).as("one pod less is always allowed (then the grace period)").isEqualTo(1);
    }

    /**
     * "Configuring scale to zero": the last replica goes only after the stable window saw no traffic, and after
     * the grace period; any traffic to a revision at zero brings one back at once.
     */
    @Test
    void theLastPodLeavesAfterAQuietStableWindowAndTheGracePeriod() {
        assertThat(steady(0.01, 1)).as("a little traffic in the window keeps it").isEqualTo(1);
        var first = kpa.decide(0, 0, 1, KnativePodAutoscaler.State.INITIAL, T0);
        assertThat(first.desired()).isEqualTo(1);
        var within = kpa.decide(0, 0, 1, first.next(), T0.plusSeconds(29));
        assertThat(within.desired()).isEqualTo(1);
        assertThat(kpa.decide(0, 0, 1, within.next(), T0.plusSeconds(30)).desired()).isZero();
        assertThat(kpa.decide(0.2, 0.2, 0, KnativePodAutoscaler.State.INITIAL, T0).desired()).as("activation").isEqualTo(1);
        assertThat(kpa.decide(0, 0, 0, KnativePodAutoscaler.State.INITIAL, T0).desired()).isZero();
        var kept = new KnativePodAutoscaler(new KnativePodAutoscaler.Parameters(10, 0.7, Duration.ofSeconds(60), 10, 200,
                1000, 2, Duration.ofSeconds(30), 1, 10));
        assertThat(kept.decide(0, 0, 1, first.next(), T0.plusSeconds(120)).desired()).as("min scale 1").isEqualTo(1);
    }

    @Test
    void settingsOutsideKnativesRangesAreRefusedNamingTheField() {
        assertThatThrownBy(() -> new KnativePodAutoscaler.Parameters(10, 0.7, Duration.ofSeconds(5), 10, 200, 1000, 2,
                Duration.ofSeconds(30), 0, 10)).hasMessageContaining("stableWindow must be in 6s..1h");
        assertThatThrownBy(() -> new KnativePodAutoscaler.Parameters(10, 0.7, Duration.ofSeconds(60), 10, 100, 1000, 2,
                Duration.ofSeconds(30), 0, 10)).hasMessageContaining("panicThresholdPercentage must be in 110..1000");
        assertThatThrownBy(() -> kpa.decide(-1, 0, 1, KnativePodAutoscaler.State.INITIAL, T0))
                .hasMessageContaining("averages must be finite and >= 0");
        assertThat(KnativePodAutoscaler.Parameters.defaults(10).panicWindow()).isEqualTo(Duration.ofSeconds(6));
    }
}
