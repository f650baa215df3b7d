package io.dilu.e2e.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;

/**
 * A bar on the p99 latency of a component's answers, judged beside a reference timed in the same run: requests to
 * the same process over the same connection that cost the same transport but none of the work the bar is about.
 * The bar is judged on the work's own figure; the reference only says what the machine was like. When the reference
 * alone takes half the bar at p99, the machine was slow (other processes on its cores, its scheduler), and a miss
 * says so rather than blame the component; on an idle machine the reference's p99 is a small fraction of a
 * millisecond.
 */
record LatencyBar(double p99Ms) {

    /** Latencies in microseconds, one per request: sorted once, read as percentiles in milliseconds. */
    static final class Latencies {
        private final long[] micros;
        private int n;
        private boolean sorted;

        Latencies(int capacity) {
            micros = new long[capacity];
        }

        void add(long nanos) {
            micros[n++] = nanos / 1000;
            sorted = false;
        }

        int count() {
            return n;
        }

        /** The q-quantile (0 < q ≤ 1), the smallest latency at least q of the requests did not exceed. */
        double percentileMs(double q) {
            if (n == 0) {
                throw new IllegalStateException("no latency recorded");
            }
            if (!sorted) {
                Arrays.sort(micros, 0, n);
                sorted = true;
            }
            return micros[Math.clamp((long) Math.ceil(n * q) - 1, 0, n - 1)] / 1000.0;
        }

        double maxMs() {
            return percentileMs(1);
        }
    }

    boolean missed(double measuredP99Ms) {
        return measuredP99Ms > p99Ms;
    }

    /** Whether the reference shows a slow machine: transport and scheduling alone took half the bar at p99. */
    boolean machineSlow(double referenceP99Ms) {
        return referenceP99Ms >= p99Ms / 2;
    }

    /** The FAIL line when the bar is missed: by how much, and whether the reference says the machine was slow. */
    Optional<String> verdict(String what, double measuredP99Ms, double referenceP99Ms) {
        if (!missed(measuredP99Ms)) {
            return Optional.empty();
        }
        return Optional.of(String.format(Locale.ROOT, "FAIL: %s p99 %.3f ms, over the %.0f ms bar; the reference's p99 was "
                + "%.3f ms (%s)", what, measuredP99Ms, p99Ms, referenceP99Ms, machineSlow(referenceP99Ms)
                        ? "at least half the bar: the machine was slow, transport and scheduling alone took that long"
                        : "under half the bar: the machine was not slow, the time was the component's own"));
    }
}
