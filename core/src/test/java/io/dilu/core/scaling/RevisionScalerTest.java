package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

/** Dilu's class, tick by tick: the lazy rule with its burst guard, and parking beside it. */
class RevisionScalerTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");
    /** One instance serves 40 rps at its SM request and 80 at its limit (the co-scaling bench's BERT-Large). */
    static final InstanceRate RATE = new InstanceRate(40, "test", 80);

    static Knobs knobs(boolean scaleToZero, boolean parking) {
        return Knobs.lazy(Map.of(), KnativeAutoscalerConfig.DEFAULTS, 40, RATE, scaleToZero, parking, new ArrayList<>());
    }

    /** Plays {@code rps} second by second, the pods ready as asked at once and parked as asked; every decision. */
    static List<RevisionScaler.Decision> play(double[] rps, Knobs knobs) {
        RevisionScaler scaler = RevisionScaler.of(knobs.policy(), ScalingParameters.DEFAULTS, -1);
        List<RevisionScaler.Decision> decisions = new ArrayList<>();
        RevisionScaler.Decision last = new RevisionScaler.Decision(0, 0, "none");
        for (int t = 0; t < rps.length; t++) {
            Readings readings = last.desired() > 0 ? Readings.ofPods(last.desired(), last.parked(), rps[t])
                    : new Readings(0, last.parked(), OptionalDouble.empty(), OptionalDouble.empty(), rps[t], 0);
            last = scaler.decide(readings, knobs, T0.plusSeconds(t));
            decisions.add(last);
        }
        return decisions;
    }

    /** 20 rps, with bursts to 300 rps for 10 s starting at each of {@code starts}. */
    static double[] bursts(int seconds, int... starts) {
        double[] rps = new double[seconds];
        java.util.Arrays.fill(rps, 20);
        for (int s : starts) {
            java.util.Arrays.fill(rps, s, s + 10, 300);
        }
        return rps;
    }

    @Test
    void aBurstsInstancesParkWhenItEndsAndTheNextBurstWakesThemInsteadOfStartingNewOnes() {
        List<RevisionScaler.Decision> d = play(bursts(400, 60, 300), knobs(false, true));
        int peak = d.get(69).instances();
        assertThat(peak).as("the burst guard scaled out for 300 rps at 40 rps each").isGreaterThanOrEqualTo(8);
        RevisionScaler.Decision between = d.get(250);
        assertThat(between.desired()).as("between the bursts the lazy rule is back at one").isEqualTo(1);
        assertThat(between.parked()).as("the others parked, not removed").isEqualTo(peak - 1);
        assertThat(between.instances()).isEqualTo(peak);
        RevisionScaler.Decision second = d.get(305);
        assertThat(second.desired()).as("the second burst serves at once").isGreaterThanOrEqualTo(peak - 1);
        assertThat(d.stream().mapToInt(RevisionScaler.Decision::instances).max().getAsInt())
                .as("the second burst woke parked instances: no pod beyond the first burst's").isEqualTo(peak);
    }

    @Test
    void withoutParkingTheReleasedInstancesGo() {
        List<RevisionScaler.Decision> d = play(bursts(400, 60, 300), knobs(false, false));
        assertThat(d.get(250).instances()).isEqualTo(1);
        assertThat(d).allMatch(x -> x.parked() == 0);
    }

    @Test
    void parkedInstancesGoOnceTheFunctionIsNotExpectedBack() {
        // No pattern learned from one burst: the fixed keep-alive, 10 minutes from the burst's end.
        List<RevisionScaler.Decision> d = play(bursts(60 + 10 + 11 * 60, 60), knobs(false, true));
        assertThat(d.get(60 + 10 + 9 * 60).parked()).as("within 10 minutes of the burst").isPositive();
        assertThat(d.getLast().parked()).as("past them").isZero();
        assertThat(d.getLast().instances()).isEqualTo(1);
    }

    @Test
    void aParkedInstanceEvictedByPlacementIsNotAskedForAgain() {
        Knobs knobs = knobs(false, true);
        RevisionScaler scaler = RevisionScaler.of(knobs.policy(), ScalingParameters.DEFAULTS, -1);
        double[] rps = bursts(200, 60);
        RevisionScaler.Decision last = new RevisionScaler.Decision(0, 0, "none");
        for (int t = 0; t < rps.length; t++) {
            last = scaler.decide(Readings.ofPods(Math.max(1, last.desired()), last.parked(), rps[t]), knobs, T0.plusSeconds(t));
        }
        int parked = last.parked();
        assertThat(parked).isPositive();
        RevisionScaler.Decision after = scaler.decide(Readings.ofPods(1, parked - 1, 20), knobs, T0.plusSeconds(200));
        assertThat(after.parked()).as("one was evicted: the rest stay, none is started to replace it").isEqualTo(parked - 1);
    }

    @Test
    void inReplaceModeTheLastInstanceParksAndAnActivatorsReportWakesIt() {
        double[] rps = new double[300];
        java.util.Arrays.fill(rps, 0, 10, 20); // 10 s of traffic, then none
        rps[299] = 5; // a request, reported by the activator: nothing serves
        List<RevisionScaler.Decision> d = play(rps, knobs(true, true));
        RevisionScaler.Decision idle = d.get(200);
        assertThat(idle.desired()).as("past the window and the grace").isZero();
        assertThat(idle.parked()).as("kept parked, at its memory").isEqualTo(1);
        assertThat(idle.lastKept()).as("the revision may reach zero: placement may let it go with its GPU").isFalse();
        RevisionScaler.Decision woken = d.getLast();
        assertThat(woken.desired()).isEqualTo(1);
        assertThat(woken.parked()).isZero();
        assertThat(woken.instances()).as("the parked pod serves: no new one").isEqualTo(1);
    }

    @Test
    void alongsideKnativesAutoscalerTheLastInstanceParksInThePathAndIsNeverLetGo() {
        double[] rps = new double[60 + 11 * 60 + 2];
        java.util.Arrays.fill(rps, 0, 10, 20); // 10 s of traffic, then none for longer than the 10-minute keep-alive
        rps[rps.length - 1] = 5; // a request, served by the parked pod in the path and reported by it
        List<RevisionScaler.Decision> d = play(rps, knobs(false, true));
        RevisionScaler.Decision idle = d.get(200);
        assertThat(idle.desired()).as("past the window: nothing serves at its SM request").isZero();
        assertThat(idle.parked()).as("the last instance kept at its memory").isEqualTo(1);
        assertThat(idle.lastKept()).as("its ReplicaSet would start another: placement keeps its GPU").isTrue();
        assertThat(d.get(rps.length - 2).instances()).as("past the keep-alive it stays: nothing could wake it").isEqualTo(1);
        RevisionScaler.Decision woken = d.getLast();
        assertThat(woken.desired()).isEqualTo(1);
        assertThat(woken.instances()).as("the parked pod serves: no new one").isEqualTo(1);
        assertThat(woken.lastKept()).isFalse();
    }

    @Test
    void alongsideKnativesAutoscalerALastInstanceEvictedComesBack() {
        Knobs knobs = knobs(false, true);
        RevisionScaler scaler = RevisionScaler.of(knobs.policy(), ScalingParameters.DEFAULTS, -1);
        for (int t = 0; t < 200; t++) {
            scaler.decide(t < 10 ? Readings.ofPods(1, 0, 20) : Readings.ofPods(0, 1, 0), knobs, T0.plusSeconds(t));
        }
        RevisionScaler.Decision after = scaler.decide(Readings.ofPods(0, 0, 0), knobs, T0.plusSeconds(200));
        assertThat(after.instances()).as("placement took the only instance; a revision at zero could not wake").isEqualTo(1);
    }

    @Test
    void withMinScaleTheLastInstancesServe() {
        Knobs knobs = Knobs.lazy(Map.of(io.dilu.core.contract.KnativeNames.MIN_SCALE, "1"), KnativeAutoscalerConfig.DEFAULTS, 40, RATE,
                false, true, new ArrayList<>());
        double[] rps = new double[300];
        java.util.Arrays.fill(rps, 0, 10, 20);
        RevisionScaler.Decision idle = play(rps, knobs).get(200);
        assertThat(idle.desired()).as("min-scale asks for a booked instance").isEqualTo(1);
        assertThat(idle.parked()).isZero();
    }

    @Test
    void parkingWakesBeforeItReleasesAndNeverStartsAnInstance() {
        assertThat(RevisionScaler.Lazy.park(1, 4, 2)).as("two woken, one new").isZero();
        assertThat(RevisionScaler.Lazy.park(1, 2, 2)).as("one woken").isEqualTo(1);
        assertThat(RevisionScaler.Lazy.park(4, 1, 0)).as("three released").isEqualTo(3);
        assertThat(RevisionScaler.Lazy.park(4, 4, 3)).isEqualTo(3);
    }
}
