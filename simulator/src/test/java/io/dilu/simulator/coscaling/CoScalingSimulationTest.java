package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.loadgen.RateTrace;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class CoScalingSimulationTest {

    static final FunctionProfile MID = FunctionProfile.midSize("f");

    static RateTrace steady(int seconds, double rps) {
        double[] r = new double[seconds];
        Arrays.fill(r, rps);
        return new RateTrace("steady", r);
    }

    @Test
    void aSteadyLoadSettlesDiluOnItsRequestRateAndKnativeOnSeventyPercentOfIt() {
        RateTrace trace = steady(600, 100);
        CoScalingSimulation.Result dilu = CoScalingSimulation.run(trace, MID, new DiluPolicy(MID));
        CoScalingSimulation.Result kpa = CoScalingSimulation.run(trace, MID, KpaPolicy.kpa(MID));
        assertThat(dilu.instances()[599]).as("100 rps at 50 per instance").isEqualTo(2);
        assertThat(kpa.instances()[599]).as("100 rps at 0.7 × 50 per instance").isEqualTo(3);
        assertThat(dilu.coldStarts()).isEqualTo(2);
        assertThat(dilu.gpuSeconds()).isLessThan(kpa.gpuSeconds());
        // A new revision starts at Knative's initial scale (1), which scales out after 20 s above its request
        // rate; the backlog of the first cold start and of those 20 s drains by about 50 s, and nothing after.
        assertThat(dilu.violations()).isPositive().isLessThan(100 * 50);
        assertThat(Arrays.stream(dilu.late(), 60, 600).sum()).isZero();
        assertThat(dilu.requests()).isEqualTo(60_000);
    }

    @Test
    void aTenSecondBurstIsAbsorbedVerticallyByDiluWhileKnativePanicsIntoColdStarts() {
        double[] r = new double[400];
        Arrays.fill(r, 40);
        Arrays.fill(r, 200, 210, 75); // above the request rate of one instance (50), within its limit (80)
        RateTrace trace = new RateTrace("burst", r);
        CoScalingSimulation.Result dilu = CoScalingSimulation.run(trace, MID, new DiluPolicy(MID));
        CoScalingSimulation.Result kpa = CoScalingSimulation.run(trace, MID, KpaPolicy.kpa(MID));
        assertThat(dilu.coldStarts()).as("no scale-out for 10 s of load").isEqualTo(1);
        assertThat(kpa.coldStarts()).isGreaterThan(dilu.coldStarts());
        double diluLateInBurst = dilu.violations();
        CoScalingSimulation.Result diluStatic = CoScalingSimulation.run(trace, MID,
                DiluPolicy.withRoom(MID, 0));
        assertThat(diluStatic.violations()).as("with no room beside it, the burst queues").isGreaterThan(diluLateInBurst);
    }

    @Test
    void sporadicTrafficKeepsDiluAlongsideWarmWhileScaleToZeroMakesEveryReturnAColdStart() {
        double[] r = new double[600];
        Arrays.fill(r, 0, 20, 10);
        Arrays.fill(r, 300, 320, 10);
        RateTrace trace = new RateTrace("sporadic", r);
        CoScalingSimulation.Result shipped = CoScalingSimulation.run(trace, MID, DiluPolicy.alongside(MID));
        assertThat(shipped.coldStarts()).as("beside Knative's autoscaler, no scale to zero: one instance stays").isEqualTo(1);
        assertThat(shipped.instances()[250]).isEqualTo(1);

        CoScalingSimulation.Result dilu = CoScalingSimulation.run(trace, MID, DiluPolicy.withoutParking(MID));
        CoScalingSimulation.Result kpa = CoScalingSimulation.run(trace, MID, KpaPolicy.kpa(MID));
        for (CoScalingSimulation.Result result : java.util.List.of(dilu, kpa)) {
            assertThat(result.coldStarts()).as(result.policy()).isEqualTo(2);
            assertThat(result.instances()[250]).as(result.policy() + " at zero between spells").isZero();
            assertThat(result.instances()[599]).isZero();
        }
        // Dilu's 40 s window, then the autoscaler's 30 s grace: one instance at 80 s, none at 100 s.
        assertThat(dilu.instances()[80]).isEqualTo(1);
        assertThat(dilu.instances()[100]).isZero();
        assertThat(shipped.violations()).as("warm: the second spell queues behind no cold start").isLessThan(dilu.violations());
        assertThat(CoScalingSimulation.run(trace, MID, DiluPolicy.withoutParking(MID)).violations())
                .as("deterministic").isEqualTo(dilu.violations());
    }

    @Test
    void parkedBetweenSpellsTheInstanceHoldsOnlyItsMemoryAndTheNextSpellWakesItWithoutAColdStart() {
        double[] r = new double[600];
        Arrays.fill(r, 0, 20, 10);
        Arrays.fill(r, 300, 320, 10);
        FunctionProfile bert = FunctionProfiles.bench();
        CoScalingSimulation.Result parked = CoScalingSimulation.run(new RateTrace("sporadic", r), bert, new DiluPolicy(bert));
        CoScalingSimulation.Result gone = CoScalingSimulation.run(new RateTrace("sporadic", r), bert,
                DiluPolicy.withoutParking(bert));
        assertThat(parked.instances()[250]).as("parked between the spells").isEqualTo(1);
        assertThat(parked.share()[250]).as("no SM booked while parked").isZero();
        assertThat(parked.books().scaleOutColdStarts()).as("the second spell woke it").isZero();
        assertThat(parked.books().wakes()).isEqualTo(1);
        assertThat(gone.books().scaleOutColdStarts()).as("without parking it was a cold start").isEqualTo(1);
        assertThat(parked.violations()).isLessThan(gone.violations());
        assertThat(parked.gpuSeconds()).as("parked, no SM booked, and no grace held at the request first")
                .isLessThan(gone.gpuSeconds() - 30 * bert.requestShare());
        assertThat(Arrays.stream(parked.late(), 300, 600).sum()).as("the parked instance answers the second spell at once")
                .isZero();
        assertThat(parked.books().memoryGibSeconds()).as("but memory").isGreaterThan(gone.books().memoryGibSeconds());
        assertThat(parked.books().dominantGpuSeconds()).as("memory is a small share of the GPU")
                .isLessThan(parked.gpuSeconds() + 300);
    }

    @Test
    void betweenSpellsFastGsGoesToZeroWhileInflessKeepsItsPrewarmedInstance() {
        double[] r = new double[900];
        for (int spell = 0; spell < 4; spell++) { // 20 s of traffic every 200 s
            Arrays.fill(r, spell * 200, spell * 200 + 20, 10);
        }
        RateTrace trace = new RateTrace("spells", r);
        CoScalingSimulation.Result fastgs = CoScalingSimulation.run(trace, MID, new FastGsPolicy(MID));
        CoScalingSimulation.Result infless = CoScalingSimulation.run(trace, MID, new InflessPolicy(MID));
        // FaST-GS+ decides every 10 s on the last 10 s: a spell is seen at its tenth second (one replica, serving
        // 8 s later), the first window without a request takes it back to zero: a cold start per spell.
        assertThat(fastgs.instances()[25]).isEqualTo(1);
        assertThat(fastgs.instances()[29]).as("the window of seconds 20-29 had no request").isZero();
        assertThat(fastgs.coldStarts()).isEqualTo(4);
        // INFless+ starts its pre-warmed instance when the function is deployed; each spell's first request makes it
        // serve, and idle it waits again, never deleted: one cold start in all, and an instance all along.
        assertThat(infless.coldStarts()).isEqualTo(1);
        assertThat(infless.instances()).containsOnly(1);
        assertThat(infless.violations()).isLessThan(fastgs.violations());
        assertThat(infless.gpuSeconds()).isGreaterThan(fastgs.gpuSeconds());
    }

    @Test
    void aWarmStartHasNoColdStartAndNoQueueBehindIt() {
        RateTrace trace = steady(120, 30);
        CoScalingSimulation.Result cold = CoScalingSimulation.run(trace, MID, new DiluPolicy(MID));
        CoScalingSimulation.Result warm = CoScalingSimulation.run(trace, MID, new DiluPolicy(MID), 1);
        assertThat(cold.coldStarts()).isEqualTo(1);
        assertThat(cold.violations()).as("the first 8 s queue behind the cold start").isPositive();
        assertThat(warm.coldStarts()).isZero();
        assertThat(warm.violations()).isZero();
        assertThat(warm.instances()[0]).isEqualTo(1);
    }
}
