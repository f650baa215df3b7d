package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Each policy's decision and vertical behaviour on its own, without the simulation around it (FaST-GS+ and
 * INFless+ have their own classes, FastGsPolicyTest and InflessPolicyTest).
 */
class CoScalingPolicyTest {

    static final FunctionProfile MID = FunctionProfile.midSize("f");

    @Test
    void diluServesAtItsLimitOnlyWhenDemandExceedsItsRequestAndHoldsTheShareThatNeeds() {
        DiluPolicy dilu = new DiluPolicy(MID);
        assertThat(dilu.serviceRate(2, 90)).isEqualTo(100); // 2 × 50 at the request
        assertThat(dilu.serviceRate(2, 130)).isEqualTo(160); // 2 × 80 at the limit
        assertThat(dilu.heldShare(2, 90)).isEqualTo(0.2);
        // 30 rps beyond 2 × 50 is half of the 2 × 30 the limits add: half-way from 20% to 40%.
        assertThat(dilu.heldShare(2, 130)).isCloseTo(0.3, within(1e-9));
        assertThat(dilu.heldShare(2, 1000)).isCloseTo(0.4, within(1e-9));
        assertThat(dilu.bookedShare()).as("placement books the request").isEqualTo(0.2);
    }

    @Test
    void diluServesThePartOfItsRangeItsGpusGrant() {
        DiluPolicy dilu = new DiluPolicy(MID);
        assertThat(dilu.serviceRate(2, 130, 1)).isEqualTo(dilu.serviceRate(2, 130));
        assertThat(dilu.serviceRate(2, 130, 0)).as("nothing beyond the request").isEqualTo(100);
        assertThat(dilu.serviceRate(2, 130, 0.5)).as("half of 2 × 30 beyond it").isCloseTo(130, within(1e-9));
        assertThat(dilu.serviceRate(2, 90, 0)).as("within its request, the grant does not matter").isEqualTo(100);
        assertThatThrownBy(() -> dilu.serviceRate(2, 130, 1.5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("granted must be in [0, 1]");
        assertThatThrownBy(() -> dilu.serviceRate(2, 130, Double.NaN)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void diluWithoutRoomFromItsNeighboursStaysAtItsRequest() {
        DiluPolicy crowded = DiluPolicy.withRoom(MID, 0);
        assertThat(crowded.serviceRate(1, 500)).isEqualTo(50);
        assertThat(crowded.heldShare(1, 500)).isEqualTo(0.2);
    }

    @Test
    void diluScalesOutOnlyAfterTwentySecondsAboveWhatItsInstancesServe() {
        DiluPolicy dilu = new DiluPolicy(MID);
        double[] rates = new double[60];
        Arrays.fill(rates, 70); // above one instance's request rate, within its limit
        for (int t = 0; t < 18; t++) { // driven once a second, as the simulation and the autoscaler's tick do
            dilu.decide(rates, t, 1, 0, 0);
        }
        assertThat(dilu.decide(rates, 18, 1, 0, 0).desired()).as("19 seconds above").isEqualTo(1);
        assertThat(dilu.decide(rates, 19, 1, 0, 0).desired()).as("20 seconds above").isEqualTo(2);
    }

    @Test
    void kpaAveragesOverTheDataItHasLikeKnativesWindowedAverage() {
        KpaPolicy kpa = KpaPolicy.kpa(MID);
        double[] rates = new double[400];
        Arrays.fill(rates, 0, 5, 70);
        Arrays.fill(rates, 300, 305, 70); // after more than a window without a pod or a request
        // Five seconds of 70 rps from a revision's start: the average is 70, not 70 × 5 / 60.
        int atStart = 0;
        for (int t = 0; t < 5; t++) {
            atStart = kpa.decide(rates, t, 1, 0, 0).desired();
        }
        assertThat(atStart).as("70 rps at 70% of 50").isEqualTo(2);
        int ready = atStart;
        for (int t = 5; t < 300; t++) {
            ready = kpa.decide(rates, t, ready, 0, 0).desired();
        }
        assertThat(ready).as("scaled to zero in the gap").isZero();
        int again = 0;
        for (int t = 300; t < 305; t++) {
            again = kpa.decide(rates, t, again, 0, 0).desired();
        }
        assertThat(again).as("the average starts over: 70 rps again, not diluted by the idle minute").isEqualTo(2);
    }

    @Test
    void kpaPanicsOnABurstAndExclusiveTargetsAWholeGpu() {
        KpaPolicy kpa = KpaPolicy.kpa(MID);
        double[] rates = new double[200];
        Arrays.fill(rates, 30);
        Arrays.fill(rates, 100, 110, 200);
        int calm = 0;
        for (int t = 0; t < 100; t++) {
            calm = kpa.decide(rates, t, Math.max(1, calm), 0, 0).desired();
        }
        assertThat(calm).as("30 rps at 70% of 50").isEqualTo(1);
        kpa.decide(rates, 100, 1, 0, 0); // driven once a second, as the simulation does
        int burst = kpa.decide(rates, 101, 1, 0, 0).desired();
        assertThat(burst).as("the panic window sees 200 rps").isGreaterThan(2);
        assertThat(KpaPolicy.exclusive(MID).bookedShare()).isEqualTo(1.0);
        assertThat(KpaPolicy.exclusive(MID).serviceRate(2, 1000)).isEqualTo(220);
    }
}
