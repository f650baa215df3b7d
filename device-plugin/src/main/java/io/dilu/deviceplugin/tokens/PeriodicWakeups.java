package io.dilu.deviceplugin.tokens;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Platform threads, each waking on absolute deadlines every period (so lateness never accumulates) to do its
 * part of the work, and recording how late each wake-up was. The token manager's GPUs wake on it; with
 * {@link #NOTHING} to do, it is the bare cost of waking, which the agent benchmark measures beside the token work,
 * and a probe of how late the host runs a thread.
 */
public final class PeriodicWakeups implements AutoCloseable {

    /** What a thread does once a period. */
    @FunctionalInterface
    public interface Work {
        /**
         * @param index the thread's index
         * @param wokeNanos {@link System#nanoTime()} when it woke
         */
        void run(int index, long wokeNanos);
    }

    /** Waking and nothing else. */
    public static final Work NOTHING = (index, wokeNanos) -> { };

    private final String name;
    private final long periodNanos;
    private final Work work;
    private final AtomicLongArray[] lateness;
    private final AtomicLongArray wakeups;
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running = true;

    /**
     * @param name the threads' names, followed by their index
     * @param latenessSamples the most recent wake-ups each thread's lateness is kept for
     */
    public PeriodicWakeups(String name, int threads, Duration period, int latenessSamples, Work work) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        if (period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("period must be positive, got " + period);
        }
        if (latenessSamples < 1) {
            throw new IllegalArgumentException("latenessSamples must be at least 1, got " + latenessSamples);
        }
        this.name = name;
        this.periodNanos = period.toNanos();
        this.work = work;
        this.lateness = new AtomicLongArray[threads];
        Arrays.setAll(lateness, t -> new AtomicLongArray(latenessSamples));
        this.wakeups = new AtomicLongArray(threads);
    }

    /** The threads, for measuring what they cost; empty before {@link #start}. */
    public List<Thread> threads() {
        return List.copyOf(threads);
    }

    public void start() {
        for (int i = 0; i < lateness.length; i++) {
            int index = i;
            Thread t = Thread.ofPlatform().name(name + i).daemon().unstarted(() -> run(index));
            t.setPriority(Thread.MAX_PRIORITY);
            threads.add(t);
            t.start();
        }
    }

    private void run(int index) {
        AtomicLongArray samples = lateness[index];
        long next = System.nanoTime() + periodNanos;
        while (running) {
            long wait;
            while ((wait = next - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            long woke = System.nanoTime();
            long n = wakeups.getPlain(index); // this thread is its only writer
            // Opaque: a reader copying the ring as it wraps gets an old or a new sample, never half of each.
            samples.setOpaque((int) (n % samples.length()), woke - next);
            wakeups.setRelease(index, n + 1); // publishes the sample to a reader that acquires the count
            work.run(index, woke);
            next += periodNanos;
            if (next < System.nanoTime() - 10 * periodNanos) {
                next = System.nanoTime() + periodNanos; // fell far behind (suspended?): do not replay missed periods
            }
        }
    }

    /**
     * Lateness of the recorded wake-ups of all threads, in nanoseconds, sorted: each thread's count read once and
     * exactly that many samples copied, so the threads may go on waking meanwhile.
     */
    public long[] sortedLateness() {
        int[] counts = new int[lateness.length];
        int total = 0;
        for (int t = 0; t < counts.length; t++) {
            counts[t] = (int) Math.min(wakeups.getAcquire(t), lateness[t].length());
            total += counts[t];
        }
        long[] all = new long[total];
        int n = 0;
        for (int t = 0; t < counts.length; t++) {
            for (int i = 0; i < counts[t]; i++) {
                all[n++] = lateness[t].getOpaque(i);
            }
        }
        Arrays.sort(all);
        return all;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        for (Thread t : threads) {
            t.join(1000);
        }
    }
}
