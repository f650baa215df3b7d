package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.loadgen.RateTrace;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * FaST-GS+ against the rule of FaST-GShare's autoscaler (fastfunc_controller.go:196-276 at f3e88c7): every 10 s,
 * the mean rate R of the last 10 s against the capacity C = replicas × T (T = 50 rps, the mid-size function at its
 * SM request, starting replicas included); Δ = R − C; above C by more than 0.2 C, ⌊Δ / T⌋ more plus one for a
 * remainder; below by more than 0.2 C, ⌊−Δ / T⌋ fewer.
 */
class FastGsPolicyTest {

    static final FunctionProfile MID = FunctionProfile.midSize("f");

    final FastGsPolicy fastgs = new FastGsPolicy(MID);

    /** {@code rps} with ±10% noise each second, seeded. */
    static RateTrace noisy(int seconds, double rps, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] r = new double[seconds];
        for (int t = 0; t < seconds; t++) {
            r[t] = rps * (1 + 0.1 * (2 * random.nextDouble() - 1));
        }
        return new RateTrace("noisy", r);
    }

    @Test
    void aSteadyLoadWithinOneReplicaHasNoViolationAndNoColdStart() {
        // Each window averages 27-33 rps against C = 50: Δ = -17 to -23, beyond the band (10) but ⌊23 / 50⌋ = 0
        // replicas to remove; the replica keeps up, so no request waits.
        CoScalingSimulation.Result r = CoScalingSimulation.run(noisy(600, 30, 1), MID, fastgs, 1);
        assertThat(r.violationRate()).isLessThan(0.01);
        assertThat(r.coldStarts()).isZero();
        assertThat(r.instances()).containsOnly(1);
    }

    @Test
    void aSteadyLoadOfTwoReplicasFromColdStartsTwoAtTheFirstDecisionAndKeepsThem() {
        CoScalingSimulation.Result r = CoScalingSimulation.run(noisy(600, 80, 2), MID, fastgs);
        // Second 9: about 80 rps against nothing, ⌊80 / 50⌋ + 1 = 2 replicas, serving from second 17. Then windows
        // of 72-88 rps against C = 100: Δ ≥ -28, ⌊28 / 50⌋ = 0 to remove, and never above C.
        assertThat(r.instances()[8]).isZero();
        assertThat(r.instances()[9]).isEqualTo(2);
        assertThat(r.instances()[599]).isEqualTo(2);
        assertThat(r.coldStarts()).isEqualTo(2);
        // The 17 s before them queue (about 1,360 requests), drained at 20 rps by about second 85; nothing after.
        assertThat(Arrays.stream(r.late(), 120, 600).sum()).isZero();
    }

    @Test
    void decisionsFallEveryTenSecondsOnTheMeanOfTheLastTen() {
        double[] rates = new double[40];
        Arrays.fill(rates, 40);
        Arrays.fill(rates, 4, 7, 240); // three seconds of a spike: (7 × 40 + 3 × 240) / 10 = 100 over seconds 0-9
        assertThat(fastgs.desired(rates, 8, 1, 0)).as("no decision between ticks").isEqualTo(1);
        assertThat(fastgs.desired(rates, 9, 1, 0)).as("Δ = 100 - 50 = 50 > 10: one more").isEqualTo(2);
        rates[15] = 140; // one second of it: (9 × 40 + 140) / 10 = 50 over seconds 10-19, Δ = 0
        assertThat(fastgs.desired(rates, 19, 1, 0)).isEqualTo(1);
        Arrays.fill(rates, 20, 23, 240); // as at first, but seen at the tick of second 29 only
        assertThat(fastgs.desired(rates, 22, 1, 0)).isEqualTo(1);
        assertThat(fastgs.desired(rates, 29, 1, 0)).isEqualTo(2);
    }

    @Test
    void aRiseAddsTheReplicasTheDifferenceNeedsOnlyBeyondTwentyPercent() {
        assertThat(fastgs.decide(70, 1)).as("Δ = 20 > 10: ⌊20 / 50⌋ + 1").isEqualTo(2);
        assertThat(fastgs.decide(58, 1)).as("Δ = 8 ≤ 10: a replica asked 116% of its rate stays alone").isEqualTo(1);
        assertThat(fastgs.decide(260, 2)).as("Δ = 160 > 20: ⌊160 / 50⌋ = 3, and one for the 10 left").isEqualTo(6);
        assertThat(fastgs.decide(250, 2)).as("Δ = 150: exactly 3, nothing left").isEqualTo(5);
        assertThat(fastgs.decide(30, 0)).as("from zero any rate is beyond 20% of nothing").isEqualTo(1);
        assertThat(fastgs.decide(0, 0)).isZero();
    }

    @Test
    void aDropRemovesTheWholeReplicasOfTheSurplus() {
        assertThat(fastgs.decide(90, 4)).as("C = 200, Δ = -110 beyond 40: ⌊110 / 50⌋ = 2 fewer").isEqualTo(2);
        assertThat(fastgs.decide(170, 4)).as("Δ = -30 within 40").isEqualTo(4);
        assertThat(fastgs.decide(20, 1)).as("Δ = -30 beyond 10, but ⌊30 / 50⌋ = 0").isEqualTo(1);
        assertThat(fastgs.decide(0, 3)).as("a window without requests: ⌊150 / 50⌋ = 3 fewer").isZero();
    }

    @Test
    void startingReplicasCountSoAScaleOutIsNotRepeatedWhileTheyStart() {
        FunctionProfile slow = new FunctionProfile("slow", 0.2, 0.05, 50, 80, 0.2, 0.4, 110, 15);
        double[] rates = new double[60];
        Arrays.fill(rates, 100);
        CoScalingSimulation.Result r = CoScalingSimulation.run(new RateTrace("rise", rates), slow, new FastGsPolicy(slow), 1);
        // Second 9: 100 against 50, one more (ready at 24). Second 19: it is still starting, but the FaSTPod's
        // replicas are 2: C = 100, Δ = 0, nothing; so one cold start, not one per tick.
        assertThat(r.instances()[9]).isEqualTo(2);
        assertThat(r.instances()[59]).isEqualTo(2);
        assertThat(r.coldStarts()).isEqualTo(1);
        assertThat(new FastGsPolicy(slow).desired(rates, 19, 1, 1)).isEqualTo(2);
    }

    @Test
    void idleItGoesToZeroAndComesBackOnlyAtTheNextDecision() {
        double[] rates = new double[160];
        Arrays.fill(rates, 0, 20, 30);
        Arrays.fill(rates, 100, 160, 30);
        CoScalingSimulation.Result r = CoScalingSimulation.run(new RateTrace("idle", rates), MID, fastgs, 1);
        // Seconds 9 and 19: 30 against 50, Δ = -20, ⌊20 / 50⌋ = 0. Second 29: a window of zeros, Δ = -50: to zero.
        assertThat(r.instances()[28]).isEqualTo(1);
        assertThat(r.instances()[29]).isZero();
        // The traffic of second 100 is seen at 109 (mean 30, ⌊30 / 50⌋ + 1 = 1), served from 117: requests wait.
        assertThat(r.instances()[108]).isZero();
        assertThat(r.instances()[109]).isEqualTo(1);
        assertThat(r.coldStarts()).isEqualTo(1);
        assertThat(Arrays.stream(r.late(), 100, 125).sum()).isGreaterThan(0);
        assertThat(Arrays.stream(r.late(), 0, 100).sum()).isZero();
    }

    @Test
    void eachReplicaServesAndBooksItsRequest() {
        assertThat(fastgs.serviceRate(3, 1000)).as("static share: no vertical scaling").isEqualTo(150);
        assertThat(fastgs.bookedShare()).isEqualTo(0.2);
    }
}
