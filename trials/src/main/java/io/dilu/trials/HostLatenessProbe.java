package io.dilu.trials;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * How late the host runs a thread: a platform thread that wakes on absolute deadlines every {@link #PERIOD} (the
 * node agent's token period) with nothing to do, and records how late each wake-up was. A trial on the emulated GPU
 * is a host process, so a starved host shows in its figures; the probe runs beside the trials, and what it measured
 * goes into their BENCH lines ({@code host_late_p99_ms}, {@code host_late_max_ms}).
 */
public final class HostLatenessProbe implements AutoCloseable {

    public static final Duration PERIOD = Duration.ofMillis(5);

    /** How late the wake-ups were, in ms. */
    public record Summary(int wakeups, double p99Ms, double maxMs) {

        /** Of lateness samples in nanoseconds, sorted. */
        static Summary of(long[] sortedNanos) {
            int n = sortedNanos.length;
            return n == 0 ? new Summary(0, 0, 0)
                    : new Summary(n, sortedNanos[(int) (n * 0.99)] / 1e6, sortedNanos[n - 1] / 1e6);
        }

        /** The BENCH keys. */
        public String keys() {
            return String.format(Locale.ROOT, "host_late_p99_ms=%.3f host_late_max_ms=%.3f", p99Ms, maxMs);
        }
    }

    private final Thread thread;
    private volatile boolean running = true;
    private long[] lateness = new long[1024]; // the probe's thread only, until it has ended
    private int wakeups;

    private HostLatenessProbe() {
        thread = Thread.ofPlatform().name("dilu-host-probe").daemon().unstarted(this::run);
        thread.setPriority(Thread.MAX_PRIORITY);
    }

    /** A probe, started. */
    public static HostLatenessProbe start() {
        HostLatenessProbe probe = new HostLatenessProbe();
        probe.thread.start();
        return probe;
    }

    private void run() {
        long period = PERIOD.toNanos();
        long next = System.nanoTime() + period;
        while (running) {
            long wait;
            while ((wait = next - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            if (wakeups == lateness.length) {
                lateness = Arrays.copyOf(lateness, wakeups * 2);
            }
            lateness[wakeups++] = System.nanoTime() - next;
            next += period;
            if (next < System.nanoTime() - 10 * period) {
                next = System.nanoTime() + period; // fell far behind (suspended?): do not replay missed periods
            }
        }
    }

    /**
     * Stops the probe and says how late its wake-ups were. Waits for its thread, which ends within a period, even if
     * interrupted (the interrupt is kept for the caller).
     */
    public Summary stop() {
        running = false;
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        long[] sorted = Arrays.copyOf(lateness, wakeups); // the thread has ended: join made its writes visible
        Arrays.sort(sorted);
        return Summary.of(sorted);
    }

    /** Stops the probe, if {@link #stop} has not. */
    @Override
    public void close() {
        if (running) {
            stop();
        }
    }
}
