package io.dilu.autoscaler.activator;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

class FrameBudgetTest {

    static final Instant T0 = Instant.parse("2026-08-01T12:00:00Z");

    static Instant at(long millis) {
        return T0.plusMillis(millis);
    }

    @Test
    void aSecondsWorthOfFramesPassesAtOnceAndTheRestAtTheRate() {
        FrameBudget b = new FrameBudget(100, 1 << 20, T0);
        int passed = 0;
        for (int i = 0; i < 1_000; i++) {
            passed += b.take(100, T0) ? 1 : 0;
        }
        assertThat(passed).as("a burst of one second's frames").isEqualTo(100);
        assertThat(b.take(100, at(5))).isFalse();
        assertThat(b.take(100, at(10))).as("one frame per 10 ms").isTrue();
        assertThat(b.take(100, at(10))).isFalse();
    }

    @Test
    void bytesAreBudgetedToAndAFrameIsTakenFromBothOrNeither() {
        FrameBudget b = new FrameBudget(100, 1_000, T0);
        assertThat(b.take(800, T0)).isTrue();
        assertThat(b.take(300, T0)).as("200 bytes left").isFalse();
        assertThat(b.take(200, T0)).isTrue();
        assertThat(b.take(1, T0)).isFalse();
        assertThat(b.take(500, at(500))).as("half a second refills half the bytes").isTrue();
    }

    @Test
    void anIdleConnectionHoldsNoMoreThanOneSecondsWorth() {
        FrameBudget b = new FrameBudget(10, 1 << 20, T0);
        int passed = 0;
        for (int i = 0; i < 100; i++) {
            passed += b.take(1, at(3_600_000)) ? 1 : 0;
        }
        assertThat(passed).isEqualTo(10);
    }

    @Test
    void aClockThatStepsBackRefillsNothing() {
        FrameBudget b = new FrameBudget(1, 1 << 20, at(1_000));
        assertThat(b.take(1, at(1_000))).isTrue();
        assertThat(b.take(1, T0)).isFalse();
        assertThat(b.take(1, at(1_500))).isFalse();
        assertThat(b.take(1, at(2_000))).isTrue();
    }
}
