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

    private final LazyHorizontalScaler scaler = new LazyHorizontalScaler(ScalingParameters.DEFAULTS);

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
        LazyHorizontalScaler keepOne = new LazyHorizontalScaler(ScalingParameters.DEFAULTS.withScaleBounds(1, 10));
        assertThat(keepOne.decide(new double[40], 2, 100)).isEqualTo(new ScaleDecision(1, ScaleDecision.Reason.BOUNDS));
    }

    @Test
    void maxScaleCapsAScaleOut() {
        LazyHorizontalScaler capped = new LazyHorizontalScaler(ScalingParameters.DEFAULTS.withScaleBounds(0, 3));
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
        assertThatThrownBy(() -> new ScalingParameters(40, 10, 30, 0, 10))
                .hasMessageContaining("phiOut + phiIn must exceed windowSeconds");
        assertThatThrownBy(() -> new ScalingParameters(40, 41, 30, 0, 10)).hasMessageContaining("phiOut must be in 1..40");
        assertThatThrownBy(() -> new ScalingParameters(40, 20, 30, 5, 3)).hasMessageContaining("maxScale");
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
}
