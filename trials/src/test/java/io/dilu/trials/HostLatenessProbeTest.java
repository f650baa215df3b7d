package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class HostLatenessProbeTest {

    @Test
    void theSummaryIsTheSamplesP99AndWorstInMilliseconds() {
        long[] sorted = LongStream.range(0, 200).map(i -> i * 1_000_000).toArray();

        HostLatenessProbe.Summary s = HostLatenessProbe.Summary.of(sorted);

        assertThat(s.wakeups()).isEqualTo(200);
        assertThat(s.p99Ms()).as("the 198th of 200").isEqualTo(198.0);
        assertThat(s.maxMs()).isEqualTo(199.0);
        assertThat(s.keys()).isEqualTo("host_late_p99_ms=198.000 host_late_max_ms=199.000");
    }

    @Test
    void aProbeThatNeverWokeSaysSoWithZeros() {
        assertThat(HostLatenessProbe.Summary.of(new long[0])).isEqualTo(new HostLatenessProbe.Summary(0, 0, 0));
    }

    @Test
    void aStoppedProbeWokeNeverEarlyAndClosingItAgainChangesNothing() throws Exception {
        HostLatenessProbe probe = HostLatenessProbe.start();
        Thread.sleep(3 * HostLatenessProbe.PERIOD.toMillis());

        HostLatenessProbe.Summary s = probe.stop();
        probe.close();

        assertThat(s.p99Ms()).as("a wake-up is recorded only once its deadline has passed").isGreaterThanOrEqualTo(0);
        assertThat(s.maxMs()).isGreaterThanOrEqualTo(s.p99Ms());
    }
}
