package io.dilu.deviceplugin.tokens;

import io.dilu.core.tokens.TokenParameters;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Runs one {@link GpuTokenLoop} per GPU, each on a platform thread of its own that wakes every period on
 * {@link PeriodicWakeups} (absolute deadlines, lateness recorded); best-effort tokens are released in parts over
 * the period by the hooks themselves.
 */
public final class TokenManager implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(TokenManager.class);

    private final List<GpuTokenLoop> loops = new ArrayList<>();
    private final InstantSource clock;
    private final PeriodicWakeups wakeups;

    /**
     * One loop per GPU, each with its own parameters (MaxTokens follows the GPU's SM count), all with one
     * period and one KLC threshold; best-effort tokens are released in {@code refillSteps} parts over it.
     */
    public TokenManager(List<TokenParameters> perGpu, int refillSteps, InstantSource clock, int latenessSamples) {
        if (perGpu.isEmpty() || perGpu.stream().map(TokenParameters::period).distinct().count() != 1
                || perGpu.stream().mapToDouble(TokenParameters::etaViolation).distinct().count() != 1) {
            throw new IllegalArgumentException("every GPU needs parameters, all with the same period and KLC threshold");
        }
        this.clock = clock;
        for (TokenParameters params : perGpu) {
            loops.add(new GpuTokenLoop(params, refillSteps));
        }
        this.wakeups = new PeriodicWakeups("dilu-tokens-gpu", perGpu.size(), perGpu.getFirst().period(),
                latenessSamples, this::tick);
    }

    /** {@code gpus} GPUs with the same parameters. */
    public TokenManager(int gpus, TokenParameters params, int refillSteps, InstantSource clock, int latenessSamples) {
        this(Collections.nCopies(gpus, params), refillSteps, clock, latenessSamples);
    }

    public GpuTokenLoop gpu(int index) {
        return loops.get(index);
    }

    /** The KLC threshold (η_violation) every loop holds an SLO instance to when it names none. */
    public double etaViolation() {
        return loops.getFirst().parameters().etaViolation();
    }

    /** The token threads, for measuring what they cost. */
    public List<Thread> threads() {
        return wakeups.threads();
    }

    public void start() {
        wakeups.start();
    }

    private void tick(int gpu, long wokeNanos) {
        try {
            loops.get(gpu).tick(clock.instant(), wokeNanos);
        } catch (RuntimeException e) {
            LOG.errorf(e, "token period of GPU %d failed; the next period retries", gpu);
        }
    }

    /** Lateness of the recorded ticks of all GPUs, in nanoseconds, sorted ({@link PeriodicWakeups#sortedLateness}). */
    public long[] sortedLateness() {
        return wakeups.sortedLateness();
    }

    @Override
    public void close() throws InterruptedException {
        wakeups.close();
    }
}
