package io.dilu.deviceplugin.tokens;

import io.dilu.core.tokens.TokenParameters;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.jboss.logging.Logger;

/**
 * Runs one {@link GpuTokenLoop} per GPU, each on a platform thread of its own that wakes on absolute
 * deadlines every period (so lateness never accumulates), and between them to release best-effort tokens in
 * parts, and records how late each period's tick was.
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

    /**
     * One loop per GPU, each with its own parameters (MaxTokens follows the GPU's SM count), all with one
     * period; best-effort tokens are released in {@code refillSteps} parts over it.
     */
    public TokenManager(List<TokenParameters> perGpu, int refillSteps, InstantSource clock, int latenessSamples) {
        if (perGpu.isEmpty() || perGpu.stream().map(TokenParameters::period).distinct().count() != 1) {
            throw new IllegalArgumentException("every GPU needs parameters, all with the same period");
        }
        this.periodNanos = perGpu.getFirst().period().toNanos();
        this.clock = clock;
        this.lateness = new long[perGpu.size()][latenessSamples];
        this.ticks = new int[perGpu.size()];
        for (TokenParameters params : perGpu) {
            loops.add(new GpuTokenLoop(params, refillSteps));
        }
    }

    /** {@code gpus} GPUs with the same parameters. */
    public TokenManager(int gpus, TokenParameters params, int refillSteps, InstantSource clock, int latenessSamples) {
        this(Collections.nCopies(gpus, params), refillSteps, clock, latenessSamples);
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
