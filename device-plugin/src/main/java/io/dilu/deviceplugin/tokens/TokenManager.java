package io.dilu.deviceplugin.tokens;

import io.dilu.core.tokens.TokenParameters;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.jboss.logging.Logger;

/**
 * Runs one {@link GpuTokenLoop} per GPU, each on a platform thread of its own that wakes on absolute
 * deadlines every period (so lateness never accumulates), and records how late each tick was.
 */
public final class TokenManager implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(TokenManager.class);

    private final List<GpuTokenLoop> loops = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final long periodNanos;
    private final InstantSource clock;
    private final long[][] lateness;
    private final int[] ticks;
    private volatile boolean running = true;

    public TokenManager(int gpus, TokenParameters params, InstantSource clock, int latenessSamples) {
        this.periodNanos = params.period().toNanos();
        this.clock = clock;
        this.lateness = new long[gpus][latenessSamples];
        this.ticks = new int[gpus];
        for (int g = 0; g < gpus; g++) {
            loops.add(new GpuTokenLoop(params));
        }
    }

    public GpuTokenLoop gpu(int index) {
        return loops.get(index);
    }

    /** The token threads, for measuring what they cost. */
    public List<Thread> threads() {
        return List.copyOf(threads);
    }

    public void start() {
        for (int g = 0; g < loops.size(); g++) {
            int gpu = g;
            Thread t = Thread.ofPlatform().name("dilu-tokens-gpu" + g).daemon().unstarted(() -> run(gpu));
            t.setPriority(Thread.MAX_PRIORITY);
            threads.add(t);
            t.start();
        }
    }

    private void run(int gpu) {
        GpuTokenLoop loop = loops.get(gpu);
        long next = System.nanoTime() + periodNanos;
        while (running) {
            long wait;
            while ((wait = next - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            long start = System.nanoTime();
            long[] samples = lateness[gpu];
            samples[ticks[gpu]++ % samples.length] = start - next;
            try {
                Instant now = clock.instant();
                loop.tick(now, start);
            } catch (RuntimeException e) {
                LOG.errorf(e, "token period of GPU %d failed; the next period retries", gpu);
            }
            next += periodNanos;
            if (next < System.nanoTime() - 10 * periodNanos) {
                next = System.nanoTime() + periodNanos; // fell far behind (suspended?): do not replay missed periods
            }
        }
    }

    /** Lateness of the recorded ticks of all GPUs, in nanoseconds, sorted. */
    public long[] sortedLateness() {
        int total = 0;
        for (int g = 0; g < lateness.length; g++) {
            total += Math.min(ticks[g], lateness[g].length);
        }
        long[] all = new long[total];
        int n = 0;
        for (int g = 0; g < lateness.length; g++) {
            int count = Math.min(ticks[g], lateness[g].length);
            System.arraycopy(lateness[g], 0, all, n, count);
            n += count;
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
