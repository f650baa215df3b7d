package io.dilu.e2e.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LatencyBarTest {

    private static final LatencyBar TEN = new LatencyBar(10);

    @Test
    void aP99AtTheBarHoldsItAndOneAboveMissesIt() {
        assertThat(TEN.verdict("x", 10.0, 0.3)).isEmpty();
        assertThat(TEN.verdict("x", 10.001, 0.3)).isPresent();
    }

    @Test
    void aMissSaysWhetherTheReferenceShowsASlowMachine() {
        assertThat(TEN.verdict("filter + prioritize", 12.5, 0.4)).hasValue("FAIL: filter + prioritize p99 12.500 ms, over the"
                + " 10 ms bar; the reference's p99 was 0.400 ms (under half the bar: the machine was not slow, the time was the"
                + " component's own)");
        assertThat(TEN.verdict("filter + prioritize", 12.5, 5.0).orElseThrow())
                .contains("the reference's p99 was 5.000 ms (at least half the bar: the machine was slow");
    }

    @Test
    void percentilesAreOfTheRequestsRecordedInMilliseconds() {
        LatencyBar.Latencies l = new LatencyBar.Latencies(200);
        for (int i = 200; i >= 1; i--) {
            l.add(i * 100_000L); // 0.1 .. 20 ms, recorded out of order
        }
        assertThat(l.count()).isEqualTo(200);
        assertThat(l.percentileMs(0.5)).isEqualTo(10.0);
        assertThat(l.percentileMs(0.99)).isEqualTo(19.8);
        assertThat(l.maxMs()).isEqualTo(20.0);
    }
}
