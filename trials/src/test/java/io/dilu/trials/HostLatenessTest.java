package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class HostLatenessTest {

    @Test
    void aWindowReadsOnlyItsOwnWakeUps() {
        HostLateness host = new HostLateness(0);
        for (int i = 0; i < 100; i++) {
            host.record(1_000_000_000L + i * HostLateness.PERIOD_NANOS, (i + 1) * 100_000L); // 0.1 .. 10 ms, in [1, 1.5) s
        }
        host.record(5_000_000_000L, 900_000_000L); // one 900 ms stall at 5 s

        HostLateness.Window first = host.window(1, 2);
        assertThat(first.samples()).isEqualTo(100);
        assertThat(first.p50Ms()).isEqualTo(5.0);
        assertThat(first.p99Ms()).isEqualTo(9.9);
        assertThat(first.maxMs()).isEqualTo(10.0);
        assertThat(host.window(0, 10).maxMs()).isEqualTo(900.0);
        assertThat(host.window(2, 5).samples()).isZero();
        assertThat(host.window(2, 5).describe()).isEqualTo("not measured");
    }

    @Test
    void eachSecondIsJudgedOnItsOwnWakeUps() {
        HostLateness host = new HostLateness(0);
        for (long deadline = 0; deadline < 4_000_000_000L; deadline += HostLateness.PERIOD_NANOS) {
            int second = (int) (deadline / 1_000_000_000L);
            // second 1: every wake-up 6 ms late; second 3: three of its 200 (p99 is the third worst), 9 ms
            boolean late = second == 1 || second == 3 && deadline % 1_000_000_000L >= 985_000_000L;
            host.record(deadline, late ? (second == 1 ? 6_000_000 : 9_000_000) : 100_000);
        }
        assertThat(host.overloadedSeconds(4)).isEqualTo(2);
        assertThat(host.overloadedSeconds(2)).as("the seconds asked about only").isEqualTo(1);
        assertThat(host.overloadedSeconds(6)).as("a second without wake-ups is not overloaded").isEqualTo(2);
    }

    @Test
    void overloadedMeansMoreThanOneTokenPeriodLateAtP99() {
        assertThat(new HostLateness.Window(100, 0.1, 5.0, 30).overloaded()).isFalse();
        assertThat(new HostLateness.Window(100, 0.1, 5.01, 30).overloaded()).isTrue();
        assertThat(new HostLateness.Window(0, Double.NaN, Double.NaN, Double.NaN).overloaded()).isFalse();
    }

    @Test
    void theProbeRecordsWakeUpsUntilClosed() throws Exception {
        HostLateness probe = HostLateness.start(System.nanoTime());
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (probe.window(0, Double.MAX_VALUE).samples() < 20) {
            assertThat(System.nanoTime()).as("20 wake-ups within 30 s").isLessThan(until);
            Thread.sleep(10);
        }
        probe.close();
        HostLateness.Window all = probe.window(0, Double.MAX_VALUE);
        Thread.sleep(50);
        assertThat(probe.window(0, Double.MAX_VALUE).samples()).as("nothing after close").isEqualTo(all.samples());
    }
}
