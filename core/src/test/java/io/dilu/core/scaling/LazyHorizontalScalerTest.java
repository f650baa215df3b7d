package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class LazyHorizontalScalerTest {

    private final LazyHorizontalScaler scaler = new LazyHorizontalScaler(ScalingParameters.PAPER);
    private final LazyHorizontalScaler guarded = new LazyHorizontalScaler(ScalingParameters.DEFAULTS);

    /** Plays a per-second load through a rate window and the scaler; returns the instance count each second. */
    private int[] run(double[] load, int start, double perInstance, LazyHorizontalScaler s) {
        RateWindow window = new RateWindow(s.parameters().windowSeconds());
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        int current = start;
        int[] counts = new int[load.length];
        for (int i = 0; i < load.length; i++) {
            t = t.plusSeconds(1);
            window.record(t, load[i]);
            current = s.decide(window.samples(t), current, perInstance).desired();
            counts[i] = current;
        }
        return counts;
    }

    /** The same with the burst guard: capacity at the limit {@code atLimit} per instance. */
    private int[] runGuarded(double[] load, int start, double perInstance, double atLimit, LazyHorizontalScaler s) {
        RateWindow window = new RateWindow(s.parameters().windowSeconds());
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        int current = start;
        int sinceBurstOut = Integer.MAX_VALUE;
        int[] counts = new int[load.length];
        for (int i = 0; i < load.length; i++) {
            t = t.plusSeconds(1);
            window.record(t, load[i]);
            ScaleDecision d = s.decide(window.samples(t), window.recent(t, s.parameters().burstWindowSeconds()), current,
                    perInstance, atLimit, sinceBurstOut);
            sinceBurstOut = d.reason() == ScaleDecision.Reason.BURST_OUT ? 1
                    : sinceBurstOut == Integer.MAX_VALUE ? sinceBurstOut : sinceBurstOut + 1;
            current = d.desired();
            counts[i] = current;
        }
        return counts;
    }

    private static double[] constant(int seconds, double rps) {
        double[] load = new double[seconds];
        Arrays.fill(load, rps);
        return load;
    }

    @Test
    void aTenSecondBurstIsLeftToVerticalScaling() {
        double[] load = constant(120, 50);
        Arrays.fill(load, 30, 40, 400); // 10 s at 8× the capacity of one instance
        int[] counts = run(load, 1, 100, scaler);
        assertThat(Arrays.stream(counts).max().orElseThrow()).isEqualTo(1);
    }

    @Test
    void aBurstWithinTheHeadroomCausesNoScaleOut() {
        double[] load = constant(120, 50);
        Arrays.fill(load, 30, 45, 150); // 15 s at 1.5× the request rate: within the 160 rps one instance serves at its limit
        assertThat(Arrays.stream(runGuarded(load, 1, 100, 160, guarded)).max().orElseThrow()).isEqualTo(1);
    }

    @Test
    void aBurstBeyondTheHeadroomScalesOutWithinTheShortWindow() {
        double[] load = constant(120, 50);
        Arrays.fill(load, 30, 45, 400); // 4× the request rate, 2.5× the limit's 160 rps, for 15 s
        int[] counts = runGuarded(load, 1, 100, 160, guarded);
        // The burst window is 4 s (10% of 40). Its mean passes 160 at the burst's second second: (50+50+400+400)/4.
        assertThat(counts[30]).as("first second of the burst: mean 137.5, within the limit").isEqualTo(1);
        assertThat(counts[31]).as("second second: mean 225 > 160 acts, for the 400 reached: ⌈400/100⌉").isEqualTo(4);
        assertThat(counts[33]).as("mean 400 > 4 × 160 = 640? no: held").isEqualTo(4);
        // The paper's rule alone would wait the burst out at one instance (15 s < φ_out).
        assertThat(Arrays.stream(run(load, 1, 100, scaler)).max().orElseThrow()).isEqualTo(1);
        // Scale-in stays lazy: the instances stay until more than φ_in seconds show they are not needed.
        assertThat(counts[44 + 30]).as("30 s after the burst").isEqualTo(4);
        assertThat(counts[119]).as("then back to one").isEqualTo(1);
    }

    @Test
    void theBurstGuardNeedsHalfItsWindowAndAKnownLimit() {
        int none = Integer.MAX_VALUE;
        assertThat(guarded.decide(constant(40, 50), new double[] {400}, 1, 100, 160, none).desired())
                .as("1 of 4 seconds of the burst window: not enough to act on").isEqualTo(1);
        assertThat(guarded.decide(constant(40, 50), new double[] {400, 400}, 1, 100, 160, none))
                .isEqualTo(new ScaleDecision(4, ScaleDecision.Reason.BURST_OUT));
        assertThat(guarded.decide(constant(40, 50), new double[] {400, 400}, 1, 100, Double.POSITIVE_INFINITY, none).desired())
                .as("no capacity at the limit known: the lazy rule alone").isEqualTo(1);
        assertThat(guarded.decide(constant(40, 50), new double[] {50, 50, 50, 50}, 4, 100, 160, 30).desired())
                .as("30 s after a burst scale-out: instances stay, however low the window").isEqualTo(4);
        assertThat(guarded.decide(constant(40, 50), new double[] {50, 50, 50, 50}, 4, 100, 160, 31).desired())
                .as("31 s after it: the lazy rule decides").isEqualTo(1);
        assertThatThrownBy(() -> guarded.decide(constant(40, 50), new double[0], 1, 100, 80, none))
                .hasMessageContaining("capacityAtLimit must be at least perInstanceRps (100.0), got 80.0");
        assertThatThrownBy(() -> new ScalingParameters(40, 20, 30, 0, 10, 41))
                .hasMessageContaining("burstWindowSeconds must be in 0..40");
    }

    @Test
    void aRisingBurstIsSizedForTheLevelItHasReachedNotTheWindowsMean() {
        int none = Integer.MAX_VALUE;
        // The demo's burst (issue 47): 24 rps, then 160, against one instance of 40 rps at its request and 80 at its limit.
        assertThat(guarded.decide(constant(40, 24), new double[] {24, 24, 160, 160}, 1, 40, 80, none))
                .as("the mean, 92 rps, passes the limit and acts; 160 rps is what the burst is at")
                .isEqualTo(new ScaleDecision(4, ScaleDecision.Reason.BURST_OUT));
        assertThat(guarded.decide(constant(40, 24), new double[] {160, 160, 160, 100}, 1, 40, 80, none).desired())
                .as("falling: the mean, 145 rps, is the level held").isEqualTo(4);
        assertThat(guarded.decide(constant(40, 24), new double[] {24, 24, 24, 200}, 1, 40, 80, none).desired())
                .as("a mean within the limit does not act, whatever the latest second").isEqualTo(1);
    }

    @Test
    void aSustainedRiseScalesOutAfterPhiOutSeconds() {
        double[] load = constant(60, 50);
        Arrays.fill(load, 10, 60, 350);
        int[] counts = run(load, 1, 100, scaler);
        assertThat(counts[10 + 18]).as("19 s above capacity: not yet").isEqualTo(1);
        assertThat(counts[10 + 19]).as("20 s above capacity: ⌈350/100⌉").isEqualTo(4);
        assertThat(counts[59]).isEqualTo(4);
    }

    @Test
    void scalesInOnlyAfterMoreThanPhiInSecondsOfLowLoad() {
        double[] load = constant(100, 50);
        int[] counts = run(load, 4, 100, scaler);
        assertThat(counts[29]).as("30 samples below: not more than φ_in").isEqualTo(4);
        assertThat(counts[30]).as("31 samples below 3 × 100").isEqualTo(1);
        assertThat(counts[99]).isEqualTo(1);
    }

    @Test
    void activatesFromZeroAtOnceAndGoesToZeroAfterAnIdleWindow() {
        assertThat(scaler.decide(new double[] {0, 0, 250}, 0, 100))
                .isEqualTo(new ScaleDecision(3, ScaleDecision.Reason.ACTIVATE));
        assertThat(scaler.decide(new double[0], 0, 100)).isEqualTo(new ScaleDecision(0, ScaleDecision.Reason.HOLD));
        assertThat(scaler.decide(new double[39], 2, 100).desired()).as("window not yet full").isEqualTo(1);
        assertThat(scaler.decide(new double[40], 2, 100)).isEqualTo(new ScaleDecision(0, ScaleDecision.Reason.SCALE_IN));
        LazyHorizontalScaler keepOne = new LazyHorizontalScaler(ScalingParameters.PAPER.withScaleBounds(1, 10));
        assertThat(keepOne.decide(new double[40], 2, 100)).isEqualTo(new ScaleDecision(1, ScaleDecision.Reason.BOUNDS));
    }

    @Test
    void maxScaleCapsAScaleOut() {
        LazyHorizontalScaler capped = new LazyHorizontalScaler(ScalingParameters.PAPER.withScaleBounds(0, 3));
        assertThat(capped.decide(constant(40, 10_000), 1, 100)).isEqualTo(new ScaleDecision(3, ScaleDecision.Reason.BOUNDS));
    }

    @Test
    void missingSecondsAreAbsentNotIdle() {
        RateWindow window = new RateWindow(40);
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        window.record(t, 120);
        window.record(t.plusSeconds(5), 80);
        assertThat(window.samples(t.plusSeconds(5))).containsExactlyInAnyOrder(120, 80);
        assertThat(window.samples(t.plusSeconds(40))).containsExactly(80);
        assertThat(window.latest(t.plusSeconds(5))).isEqualTo(80);
        assertThat(window.latest(t.plusSeconds(6))).isEqualTo(-1);
        assertThatThrownBy(() -> window.record(t, -1)).hasMessageContaining("rps");
    }

    @Test
    void parametersThatCouldFlapAreRefused() {
        assertThatThrownBy(() -> new ScalingParameters(40, 10, 30, 0, 10, 4))
                .hasMessageContaining("phiOut + phiIn must exceed windowSeconds");
        assertThatThrownBy(() -> new ScalingParameters(40, 41, 30, 0, 10, 4)).hasMessageContaining("phiOut must be in 1..40");
        assertThatThrownBy(() -> new ScalingParameters(40, 20, 30, 5, 3, 4)).hasMessageContaining("maxScale");
    }

    @Property(tries = 500)
    void aConstantLoadSettlesAndNeverFlapsWithTheBurstGuard(
            @ForAll @DoubleRange(min = 0, max = 5_000) double rps,
            @ForAll @DoubleRange(min = 10, max = 500) double perInstance,
            @ForAll @DoubleRange(min = 1, max = 3) double limitOverRequest,
            @ForAll @IntRange(min = 0, max = 60) int start) {
        int[] counts = runGuarded(constant(400, rps), start, perInstance, perInstance * limitOverRequest, guarded);
        int settled = counts[40];
        for (int i = 40; i < counts.length; i++) {
            assertThat(counts[i]).as("second %d", i).isEqualTo(settled);
        }
        // It only ever moves one way once it has started: never out, then in, then out again.
        int turns = 0;
        for (int i = 2; i < counts.length; i++) {
            int before = Integer.signum(counts[i - 1] - counts[i - 2]);
            int now = Integer.signum(counts[i] - counts[i - 1]);
            turns += before != 0 && now != 0 && before != now ? 1 : 0;
        }
        assertThat(turns).as("no flapping").isZero();
        if (rps > 0) {
            assertThat(settled * perInstance).as("capacity covers the load").isGreaterThanOrEqualTo(rps - 1e-6);
        }
    }

    @Property(tries = 500)
    void aConstantLoadSettlesAndNeverFlaps(
            @ForAll @DoubleRange(min = 0, max = 5_000) double rps,
            @ForAll @DoubleRange(min = 10, max = 500) double perInstance,
            @ForAll @IntRange(min = 0, max = 60) int start) {
        int[] counts = run(constant(400, rps), start, perInstance, scaler);
        // After one window the count is settled: it never changes again.
        int settled = counts[40];
        for (int i = 40; i < counts.length; i++) {
            assertThat(counts[i]).as("second %d", i).isEqualTo(settled);
        }
        int changes = 0;
        for (int i = 1; i < counts.length; i++) {
            changes += counts[i] != counts[i - 1] ? 1 : 0;
        }
        assertThat(changes).as("one move, or two when starting from zero").isLessThanOrEqualTo(2);
        if (rps > 0) {
            assertThat(settled * perInstance).as("capacity covers the load").isGreaterThanOrEqualTo(rps - 1e-6);
            assertThat((settled - 2) * perInstance).as("with at most one instance to spare").isLessThan(rps);
        }
    }

    /**
     * The rule as the paper states it, read off the sorted window: the decision counts instead of sorting, and must
     * decide the same on any window (with duplicates and zeros, which sorting and counting could treat apart).
     */
    @Property(tries = 2000)
    void countingDecidesAsTheSortedWindowDoes(
            @ForAll("windows") double[] samples,
            @ForAll @IntRange(min = 0, max = 12) int current,
            @ForAll @IntRange(min = 1, max = 20) int steps) {
        double perInstance = steps * 2.5; // on the samples' grid: thresholds fall exactly on samples
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        ScalingParameters p = ScalingParameters.PAPER;
        int expected;
        if (current == 0) {
            expected = n > 0 && sorted[n - 1] > 0 ? Math.max(1, (int) Math.ceil(sorted[n - 1] / perInstance - 1e-9)) : 0;
        } else if (n >= p.phiOut() && sorted[n - p.phiOut()] > current * perInstance) {
            expected = Math.max(current + 1, (int) Math.ceil(sorted[n - p.phiOut()] / perInstance - 1e-9));
        } else if (n == p.windowSeconds() && sorted[n - 1] == 0) {
            expected = 0;
        } else {
            expected = current;
            while (expected > 0 && below(sorted, (expected - 1) * perInstance) > p.phiIn()) {
                expected--;
            }
        }
        assertThat(scaler.decide(samples, current, perInstance).desired()).isEqualTo(Math.min(p.maxScale(), expected));
    }

    private static long below(double[] sorted, double level) {
        return Arrays.stream(sorted).filter(v -> v < level).count();
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<double[]> windows() {
        // Rates on a coarse grid, so that ties and rates exactly at a threshold come up often.
        return net.jqwik.api.Arbitraries.integers().between(0, 40).map(i -> i * 2.5).array(double[].class).ofMaxSize(40);
    }
}
