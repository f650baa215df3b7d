package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class FluidQueueTest {

    @Test
    void loadUnderTheServiceRateWaitsForNothing() {
        FluidQueue.Step s = FluidQueue.step(0, 80, 100, 0.05, 0.2);
        assertThat(s.served()).isEqualTo(80);
        assertThat(s.backlog()).isZero();
        assertThat(s.violations()).isZero();
        assertThat(FluidQueue.step(0, 80, 100, 0.25, 0.2).violations()).as("a batch slower than the SLO").isEqualTo(80);
    }

    @Test
    void aBacklogDrainsAndOnlyTheRequestsThatWaitedTooLongViolate() {
        // 50 wait, 100 arrive, 100/s served: the queue stays at 50, so every request served waited 0.5 s.
        FluidQueue.Step overload = FluidQueue.step(50, 100, 100, 0.05, 0.2);
        assertThat(overload.served()).isEqualTo(100);
        assertThat(overload.backlog()).isEqualTo(50);
        assertThat(overload.violations()).as("every served request waited 0.5 s").isEqualTo(100);
        // 40 wait, 60 arrive, 200/s: the first served waited 0.2 s, the last none; SLO 0.2 s with s = 0.05.
        FluidQueue.Step draining = FluidQueue.step(40, 60, 200, 0.05, 0.2);
        assertThat(draining.served()).isEqualTo(100);
        assertThat(draining.backlog()).isZero();
        assertThat(draining.violations()).as("latencies 0.05..0.25 s, a quarter above 0.2 s").isCloseTo(25, within(1e-9));
    }

    @Test
    void withNoInstanceReadyEveryRequestWaitsAndIsJudgedWhenServed() {
        double backlog = 0;
        for (int second = 0; second < 3; second++) { // a cold start of 3 s
            FluidQueue.Step s = FluidQueue.step(backlog, 10, 0, 0.05, 0.5);
            assertThat(s.served()).isZero();
            assertThat(s.violations()).isZero();
            backlog = s.backlog();
        }
        assertThat(backlog).isEqualTo(30);
        FluidQueue.Step ready = FluidQueue.step(backlog, 10, 100, 0.05, 0.5);
        assertThat(ready.served()).isEqualTo(40);
        assertThat(ready.violations()).as("waits 0.3 s down to 0: none over 0.45 s").isZero();
        assertThat(FluidQueue.step(300, 10, 100, 0.05, 0.5).violations()).as("waits of 3 s").isEqualTo(100);
    }

    @Test
    void badInputNamesTheField() {
        assertThatThrownBy(() -> FluidQueue.step(-1, 0, 1, 0, 1)).hasMessage("backlog must be finite and >= 0.0, got -1.0");
        assertThatThrownBy(() -> FluidQueue.step(0, 0, 1, 0, 0)).hasMessage("sloSeconds must be finite and > 0, got 0.0");
        assertThatThrownBy(() -> FluidQueue.step(0, Double.NaN, 1, 0, 1)).hasMessageContaining("arrivals");
    }
}
