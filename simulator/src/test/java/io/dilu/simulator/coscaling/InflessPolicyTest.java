package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.dilu.loadgen.RateTrace;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * INFless+ against the rules of INFless's dispatcher (gpu/aside/dispatcher.go, every second) and scaling monitor
 * (handlers/deploy.go, every 10 s, at seconds 9, 19, …). The mid-size function: an instance serves at most
 * M = 50 rps (its SM request) and, a batch of 50 × 0.05 = 2.5 requests having to fill within 0.2 − 0.05 s, at least
 * m = 2.5 / 0.15 = 16.7 rps; n instances have the range [16.7 n, 50 n], and "loaded 80% into it" means
 * 16.7 n + 0.8 × 33.3 n = 43.3 n. Cold start 8 s.
 */
class InflessPolicyTest {

    static final FunctionProfile MID = FunctionProfile.midSize("f");

    static RateTrace trace(double[] rates) {
        return new RateTrace("t", rates);
    }

    static double[] constant(int seconds, double rps) {
        double[] r = new double[seconds];
        Arrays.fill(r, rps);
        return r;
    }

    @Test
    void anInstancesRangeRunsFromTheRateThatFillsABatchBeforeItsTimeoutToItsRate() {
        assertThat(new InflessPolicy(MID).minRps()).isCloseTo(2.5 / 0.15, within(1e-9));
        FunctionProfile single = new FunctionProfile("single", 0.2, 0.05, 10, 16, 0.2, 0.4, 20, 8); // 0.5 a batch
        assertThat(new InflessPolicy(single).minRps()).as("one request at a time: 1 rps").isEqualTo(1);
    }

    @Test
    void aSteadyLoadWithinOneInstanceHasNoViolationAndNoColdStart() {
        // The run's instance is taken as the pre-warmed one; the first request makes it serve. 27-33 rps against it:
        // no overflow (≤ 50), above its minimum, below 43.3 but with no other to take out, so it gets all; never idle.
        CoScalingSimulation.Result r = CoScalingSimulation.run(FastGsPolicyTest.noisy(600, 30, 1), MID, new InflessPolicy(MID), 1);
        assertThat(r.violationRate()).isLessThan(0.01);
        assertThat(r.coldStarts()).isZero();
        assertThat(r.instances()).containsOnly(1);
    }

    @Test
    void aSteadyLoadOfTwoInstancesFromColdStartsThePrewarmedOneAndOneMore() {
        CoScalingSimulation.Result r = CoScalingSimulation.run(FastGsPolicyTest.noisy(600, 80, 2), MID, new InflessPolicy(MID));
        // Second 0: deploying starts the pre-warmed instance, which the first request makes serving (ready at 8).
        // 72-88 rps against 50: an overflow of 22-38, over 3% of the rate, so the round of second 9 adds
        // ⌈38 / 50⌉ = 1 (ready at 17). Then two: 72-88 ≤ 100, and either ≥ 86.7 (both share) or no single instance
        // holds it (> 50) and it reaches their minimum 33.3 (both share): no overflow, none idle, kept.
        assertThat(r.instances()[0]).isEqualTo(1);
        assertThat(r.instances()[9]).isEqualTo(2);
        assertThat(r.instances()[599]).isEqualTo(2);
        assertThat(r.coldStarts()).isEqualTo(2);
        // 8 s at 80 and 9 s at 30 beyond one instance queue (about 910), drained at 20 rps by about second 62.
        assertThat(Arrays.stream(r.late(), 120, 600).sum()).isZero();
    }

    @Test
    void aRiseScalesOutAtTheNextRoundByTheOverflowOnlyBeyondThreePercentOfTheRate() {
        double[] rates = constant(90, 30);
        Arrays.fill(rates, 30, 90, 100);
        CoScalingSimulation.Result r = CoScalingSimulation.run(trace(rates), MID, new InflessPolicy(MID), 1);
        // From second 30: 100 against 50, an overflow of 50 (50% of the rate): the round of 39 adds ⌈50 / 50⌉ = 1.
        // Then 100 ≥ 86.7: both share, no overflow.
        assertThat(r.instances()[38]).isEqualTo(1);
        assertThat(r.instances()[39]).isEqualTo(2);
        assertThat(r.instances()[89]).isEqualTo(2);
        assertThat(r.coldStarts()).isEqualTo(1);
        // 51 rps: an overflow of 1, 2.0% of the rate: never; 52 rps: 2, 3.8%: one more at the first round.
        assertThat(CoScalingSimulation.run(trace(constant(60, 51)), MID, new InflessPolicy(MID), 1).coldStarts()).isZero();
        CoScalingSimulation.Result over = CoScalingSimulation.run(trace(constant(60, 52)), MID, new InflessPolicy(MID), 1);
        assertThat(over.instances()[9]).isEqualTo(2);
        assertThat(over.coldStarts()).isEqualTo(1);
    }

    @Test
    void aDropLeavesAnInstanceWithoutRequestsThatIsDeletedAfterThreeIdleRounds() {
        double[] rates = constant(150, 90);
        Arrays.fill(rates, 0, 60, 140);
        CoScalingSimulation.Result r = CoScalingSimulation.run(trace(rates), MID, new InflessPolicy(MID), 1);
        // 140 against one: an overflow of 90, the round of 9 adds ⌈90 / 50⌉ = 2; then 140 ≥ 3 × 43.3 = 130: all share.
        assertThat(r.instances()[9]).isEqualTo(3);
        // Second 60: 90 < 130. Taking out one leaves two, whose range [33.3, 100] holds 90 loaded 80% in (≥ 86.7):
        // the newest gets nothing. It counts idle at the rounds of 69, 79 and 89, and is deleted at 99.
        assertThat(r.instances()[98]).isEqualTo(3);
        assertThat(r.instances()[99]).isEqualTo(2);
        // Then 90 ≥ 86.7 for the two: both share, kept.
        assertThat(r.instances()[149]).isEqualTo(2);
        assertThat(r.coldStarts()).isEqualTo(2);
    }

    @Test
    void aSpikeCountsOnlyIfItOverflowsAtARound() {
        double[] between = constant(80, 35);
        Arrays.fill(between, 12, 15, 200); // overflows at 12-14, but the round of 19 sees 35
        CoScalingSimulation.Result missed = CoScalingSimulation.run(trace(between), MID, new InflessPolicy(MID), 1);
        assertThat(missed.coldStarts()).isZero();
        assertThat(missed.violations()).as("the spike queues on the one instance").isPositive();

        double[] atRound = constant(80, 35);
        Arrays.fill(atRound, 18, 21, 200);
        CoScalingSimulation.Result caught = CoScalingSimulation.run(trace(atRound), MID, new InflessPolicy(MID), 1);
        // Round 19: an overflow of 150 (75%): ⌈150 / 50⌉ = 3 more. Second 20: 200 ≥ 4 × 43.3 = 173.3, all share.
        assertThat(caught.instances()[19]).isEqualTo(4);
        // Second 21: 35 against four. No set loaded 80% in (one would need ≥ 43.3); 40% in, one instance needs
        // 16.7 + 0.4 × 33.3 = 30 ≤ 35 ≤ 50: one kept, the three newest get nothing, idle at 29, 39, 49, deleted at 59.
        assertThat(caught.instances()[58]).isEqualTo(4);
        assertThat(caught.instances()[59]).isEqualTo(1);
        assertThat(caught.coldStarts()).isEqualTo(3);
    }

    @Test
    void idleThePrewarmedInstanceWaitsServingNothingAndServesAgainWithoutAColdStart() {
        double[] rates = new double[260];
        Arrays.fill(rates, 0, 20, 30);
        Arrays.fill(rates, 200, 260, 30);
        CoScalingSimulation.Result r = CoScalingSimulation.run(trace(rates), MID, new InflessPolicy(MID), 1);
        assertThat(r.instances()).as("never deleted").containsOnly(1);
        assertThat(r.coldStarts()).isZero();
        assertThat(r.violations()).isZero();

        // Driven by hand: at second 20 it gets no request, at the round of 29 it goes back to waiting and serves
        // nothing; the request of second 200 finds no serving instance and the gateway makes it serve again.
        InflessPolicy infless = new InflessPolicy(MID);
        for (int t = 0; t < 200; t++) {
            assertThat(infless.desired(rates, t, 1, 0)).isEqualTo(1);
            if (t == 25) {
                assertThat(infless.serviceRate(1, 0)).as("serving, no lottery yet taken away").isEqualTo(50);
            }
        }
        assertThat(infless.serviceRate(1, 0)).as("waiting: the proxy sends it nothing").isZero();
        infless.desired(rates, 200, 1, 0);
        assertThat(infless.serviceRate(1, 30)).isEqualTo(50);
    }

    @Test
    void deployingStartsThePrewarmedInstanceEvenWithoutTraffic() {
        CoScalingSimulation.Result r = CoScalingSimulation.run(trace(new double[60]), MID, new InflessPolicy(MID));
        assertThat(r.instances()).containsOnly(1);
        assertThat(r.coldStarts()).isEqualTo(1);
    }

    @Test
    void aRateBelowOneInstancesMinimumDeletesNone() {
        double[] rates = constant(200, 10);
        Arrays.fill(rates, 0, 60, 140);
        CoScalingSimulation.Result r = CoScalingSimulation.run(trace(rates), MID, new InflessPolicy(MID), 1);
        // Three instances by second 9 (as above). From 60, 10 rps is below any instance's minimum (16.7): no set
        // holds it and it is below all three's (50), so it fills the oldest and the other two keep the lotteries
        // they had (lines 332-346): none is ever without one, none is deleted.
        assertThat(r.instances()[9]).isEqualTo(3);
        assertThat(r.instances()[199]).isEqualTo(3);
    }

    @Test
    void itRefusesARunWhoseInstancesAreNotItsOwn() {
        InflessPolicy infless = new InflessPolicy(MID);
        double[] rates = constant(10, 30);
        infless.desired(rates, 0, 1, 0);
        assertThatThrownBy(() -> infless.desired(rates, 1, 2, 0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("one per run");
    }
}
