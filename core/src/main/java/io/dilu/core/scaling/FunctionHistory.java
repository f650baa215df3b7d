package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What one function's own history says about keeping instances warm (Shahrad et al.'s hybrid histogram, {@link
 * KeepAlive}), for {@link Autoscale}: a histogram of its idle times — from its last request to its next — and one of
 * the gaps between its bursts — spells when the demand was beyond what one instance serves at its SM limit. Fed
 * every tick with the tick's rate; explicitly owned mutable state, one per function, kept by the caller between
 * ticks (the histograms survive a restart through {@link GapHistogram#encode()}).
 *
 * <p>Without a trusted pattern it adds nothing: the last instance goes as Knative's grace says, and instances a
 * burst needed go when the lazy rule says. With one, the last instance stays (or is pre-warmed) when the function
 * is expected back, and a burst's instances stay (or are pre-warmed) when the next burst is.
 */
public final class FunctionHistory {

    /**
     * The policy as the autoscaler uses it: the paper's percentiles, margins and tests on {@link KeepAlive#BIN}
     * bins, and without a pattern no keep-alive of its own (the autoscaler's behaviour before it has learned).
     */
    public static final KeepAlive.Parameters PARAMETERS = new KeepAlive.Parameters(KeepAlive.BIN,
            KeepAlive.PAPER_RANGE, 0.05, 0.99, 0.10, 2, KeepAlive.MIN_SAMPLES, 0.5, Duration.ZERO);

    /** A burst's instances to keep warm, and until when the history says its like comes back. */
    public record Burst(KeepAlive.Decision decision, int instances) {}

    private final KeepAlive policy = new KeepAlive(PARAMETERS);
    private final GapTracker idleGaps;
    private final GapTracker burstGaps;
    private GapHistogram idle;
    private GapHistogram bursts;
    private int burstInstances;
    private int lastBurstInstances;

    /**
     * @param idleMinGap idle spells shorter than this are part of the activity: the time the scaler holds the last
     *     instance anyway (its window and Knative's grace)
     * @param burstMinGap gaps between bursts shorter than this are one burst: the time a burst's instances stay anyway
     */
    public FunctionHistory(Duration idleMinGap, Duration burstMinGap) {
        this.idleGaps = new GapTracker(idleMinGap);
        this.burstGaps = new GapTracker(burstMinGap);
        this.idle = policy.emptyHistogram();
        this.bursts = policy.emptyHistogram();
    }

    /**
     * Records the tick's rate and the instances the scaler asked for.
     *
     * @param burstThreshold the rate beyond which the function is in a burst: what one instance serves at its limit
     */
    public void observe(Instant now, double rps, double burstThreshold, int desired) {
        idleGaps.observe(now, rps > 0).ifPresent(g -> idle = idle.record(g));
        boolean inBurst = rps > burstThreshold;
        Optional<Duration> gap = burstGaps.observe(now, rps, burstThreshold);
        if (gap.isPresent()) {
            bursts = bursts.record(gap.get());
            burstInstances = 0;
        }
        if (inBurst) {
            burstInstances = Math.max(burstInstances, desired);
            lastBurstInstances = burstInstances;
        }
    }

    /** For a function idle now: when its last instance should be held, from its idle times. */
    public Optional<KeepAlive.Decision> idle(Duration warmup) {
        return idleGaps.idleSince().map(since -> policy.decide(idle, since, warmup));
    }

    /** Between bursts: how many instances the last burst needed, and when the history says to hold them. */
    public Optional<Burst> betweenBursts(Duration warmup) {
        return burstGaps.idleSince().filter(s -> lastBurstInstances > 0)
                .map(since -> new Burst(policy.decide(bursts, since, warmup), lastBurstInstances));
    }

    /** What the histograms say now, for logs and reports. */
    public String summary() {
        return "idle " + policy.pattern(idle) + "; bursts " + policy.pattern(bursts);
    }
}
