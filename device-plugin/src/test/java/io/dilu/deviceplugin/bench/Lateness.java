package io.dilu.deviceplugin.bench;

import io.dilu.deviceplugin.tokens.PeriodicWakeups;
import java.util.Collection;
import java.util.Locale;

/**
 * How late periodic wake-ups ran against their absolute deadlines, in milliseconds. Every emulated or timed
 * benchmark prints the host's figure ({@code host_late_p99_ms}, {@code host_late_max_ms}: the token loop's 5 ms
 * periods, or a bare probe's where no token manager runs), so that a result taken while the machine starved the
 * run says so.
 */
record Lateness(int samples, double p50Ms, double p99Ms, double maxMs) {

    /** Of a sorted record of lateness in nanoseconds ({@link PeriodicWakeups#sortedLateness}). */
    static Lateness of(long[] sortedNanos) {
        if (sortedNanos.length == 0) {
            throw new IllegalStateException("no wake-up was recorded: the run was shorter than one period");
        }
        int n = sortedNanos.length;
        return new Lateness(n, sortedNanos[n / 2] / 1e6, sortedNanos[(int) (n * 0.99)] / 1e6, sortedNanos[n - 1] / 1e6);
    }

    /** The worst of several runs: the highest p99 and the highest maximum (a stall in one run is not averaged away). */
    static Lateness worst(Collection<Lateness> runs) {
        return new Lateness(runs.stream().mapToInt(Lateness::samples).sum(),
                runs.stream().mapToDouble(Lateness::p50Ms).max().orElseThrow(),
                runs.stream().mapToDouble(Lateness::p99Ms).max().orElseThrow(),
                runs.stream().mapToDouble(Lateness::maxMs).max().orElseThrow());
    }

    /** Lateness samples a wake-up record needs to hold a run of {@code seconds} at the agent's 5 ms, with room. */
    static int samplesFor(long seconds) {
        return (int) Math.min(1 << 20, (seconds + 60) * 200);
    }

    /** A probe of the host where no token manager runs: one thread waking every 5 ms with nothing to do. */
    static PeriodicWakeups probe(long seconds) {
        return new PeriodicWakeups("dilu-host-probe", 1, ColocationBench.shippedParameters().period(), samplesFor(seconds),
                PeriodicWakeups.NOTHING);
    }

    /** The BENCH keys of the host's lateness. */
    String hostKeys() {
        return String.format(Locale.ROOT, "host_late_p99_ms=%.3f host_late_max_ms=%.3f", p99Ms, maxMs);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "p50 %.3f ms, p99 %.3f ms, max %.3f ms", p50Ms, p99Ms, maxMs);
    }
}
