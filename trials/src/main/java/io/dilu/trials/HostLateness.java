package io.dilu.trials;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoublePredicate;

/**
 * How late this machine wakes a thread, measured beside what runs on the emulated GPU — trials, the local cluster:
 * a platform thread that sleeps to absolute deadlines every 5 ms, as each node agent's token loop does ({@code
 * TokenManager}), and records by how much each wake-up missed its deadline. What is measured, the measuring process
 * and this probe share the machine's cores: on an idle machine a wake-up is a fraction of a millisecond late; when
 * the p99 passes one token period, the token loops, the emulated GPUs' processes and the servers wait for CPU as
 * this thread does, and what is measured then is the machine, not Dilu. The figure goes into the BENCH lines of
 * what it ran beside ({@link Window#keys}).
 *
 * <p>The node agents measure their own ticks' lateness but do not export it; a probe in the measuring process
 * sees the same cores without asking them.
 */
public final class HostLateness implements AutoCloseable {

    public static final long PERIOD_NANOS = 5_000_000;
    /** Beyond one token period late at p99, the host is overloaded: one tick in a hundred comes a period late or more. */
    public static final double OVERLOADED_P99_MS = PERIOD_NANOS / 1e6;

    private final long origin;
    private long[] at = new long[1 << 12];
    private long[] late = new long[1 << 12];
    private int n;
    private volatile boolean running;
    private Thread thread;

    /** Samples timed from {@code originNanos} ({@code System.nanoTime()}), the caller's time zero. */
    public HostLateness(long originNanos) {
        this.origin = originNanos;
    }

    /** A probe waking every 5 ms from now, timed from {@code originNanos}, until closed. */
    public static HostLateness start(long originNanos) {
        HostLateness probe = new HostLateness(originNanos);
        probe.running = true;
        probe.thread = Thread.ofPlatform().daemon().name("host-lateness").start(probe::loop);
        return probe;
    }

    // As TokenManager's loop: absolute deadlines, so lateness never accumulates; far behind, missed periods are skipped.
    private void loop() {
        long next = System.nanoTime() + PERIOD_NANOS;
        while (running) {
            long wait;
            while ((wait = next - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            record(next - origin, System.nanoTime() - next);
            next += PERIOD_NANOS;
            if (next < System.nanoTime() - 10 * PERIOD_NANOS) {
                next = System.nanoTime() + PERIOD_NANOS;
            }
        }
    }

    /** One wake-up: its deadline, from the origin, and how late it came (the probe's thread; tests, made up). */
    public synchronized void record(long deadlineNanos, long latenessNanos) {
        if (n == at.length) {
            at = Arrays.copyOf(at, 2 * n);
            late = Arrays.copyOf(late, 2 * n);
        }
        at[n] = deadlineNanos;
        late[n] = latenessNanos;
        n++;
    }

    /** The wake-ups whose deadline fell in [from, to) seconds from the origin. */
    public Window window(double fromSeconds, double toSeconds) {
        return over(s -> s >= fromSeconds && s < toSeconds);
    }

    /** The wake-ups whose deadline, in seconds from the origin, {@code when} accepts. */
    public synchronized Window over(DoublePredicate when) {
        long[] chosen = new long[n];
        int count = 0;
        for (int i = 0; i < n; i++) {
            if (when.test(at[i] / 1e9)) {
                chosen[count++] = late[i];
            }
        }
        Arrays.sort(chosen, 0, count);
        return new Window(count, quantileMs(chosen, count, 0.5), quantileMs(chosen, count, 0.99),
                count == 0 ? Double.NaN : chosen[count - 1] / 1e6);
    }

    /** How many of the whole seconds [0, seconds) from the origin were overloaded, each judged on its own wake-ups. */
    public synchronized int overloadedSeconds(int seconds) {
        // One pass: the wake-ups are recorded in the order of their deadlines.
        int overloaded = 0;
        long[] bucket = new long[n];
        int i = 0;
        for (int second = 0; second < seconds; second++) {
            long end = (second + 1) * 1_000_000_000L;
            int count = 0;
            for (; i < n && at[i] < end; i++) {
                if (at[i] >= second * 1_000_000_000L) {
                    bucket[count++] = late[i];
                }
            }
            Arrays.sort(bucket, 0, count);
            if (new Window(count, Double.NaN, quantileMs(bucket, count, 0.99), Double.NaN).overloaded()) {
                overloaded++;
            }
        }
        return overloaded;
    }

    private static double quantileMs(long[] sorted, int count, double q) {
        return count == 0 ? Double.NaN : sorted[Math.clamp((long) Math.ceil(count * q) - 1, 0, count - 1)] / 1e6;
    }

    /** Lateness of the wake-ups in a stretch of time: how many, and p50, p99 and the worst, in milliseconds. */
    public record Window(int samples, double p50Ms, double p99Ms, double maxMs) {

        /** More than one token period late at p99: the host, not Dilu, set the pace. */
        public boolean overloaded() {
            return samples > 0 && p99Ms > OVERLOADED_P99_MS;
        }

        /**
         * The BENCH keys: {@code host_late_p99_ms=… host_late_max_ms=…}; 0 for a run shorter than one period, which
         * gave the host no wake-up to be late for.
         */
        public String keys() {
            return samples == 0 ? "host_late_p99_ms=0.000 host_late_max_ms=0.000"
                    : String.format(Locale.ROOT, "host_late_p99_ms=%.3f host_late_max_ms=%.3f", p99Ms, maxMs);
        }

        /** "late by p50 0.06 ms, p99 0.21 ms, max 3.4 ms", or that nothing was measured. */
        public String describe() {
            return samples == 0 ? "not measured" : String.format(Locale.ROOT, "late by p50 %.2f ms, p99 %.2f ms, max %.1f ms",
                    p50Ms, p99Ms, maxMs);
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        if (thread != null) {
            thread.join();
        }
    }
}
