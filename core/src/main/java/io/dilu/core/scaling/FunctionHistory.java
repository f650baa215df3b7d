package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;

/**
 * What one function's own history says about how long an instance it no longer needs should stay parked ({@link
 * RevisionScaler}): Shahrad et al.'s hybrid histogram ({@link KeepAlive}) over its idle times — from its last request
 * to its next — and over the gaps between its bursts — spells when the demand was beyond what one instance serves at
 * its SM limit. Fed every tick with the tick's rate; explicitly owned mutable state, one per function, kept by the
 * caller between ticks (the histograms survive a restart through {@link GapHistogram#encode()}).
 *
 * <p>Where a histogram holds a pattern, a released instance stays until the tail of the function's gaps (99th
 * percentile, plus 10%); where it holds none yet, for the fixed keep-alive the paper compares against (10 minutes,
 * {@link KeepAlive#FIXED_KEEP_ALIVE}). The paper keeps an instance booked in full for that long; a parked one holds
 * its memory alone, so the fixed keep-alive is cheap enough to apply to every function from its first idle spell.
 */
public final class FunctionHistory {

    /** The policy: the paper's percentiles, margins and tests on {@link KeepAlive#BIN} bins; without a pattern, 10 minutes. */
    public static final KeepAlive.Parameters PARAMETERS = KeepAlive.Parameters.DEFAULTS;

    private final KeepAlive policy = new KeepAlive(PARAMETERS);
    private final GapTracker idleGaps;
    private final GapTracker burstGaps;
    private GapHistogram idle;
    private GapHistogram bursts;

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
     * Records the tick's rate.
     *
     * @param burstThreshold the rate beyond which the function is in a burst: what one instance serves at its limit
     */
    public void observe(Instant now, double rps, double burstThreshold) {
        idleGaps.observe(now, rps > 0).ifPresent(g -> idle = idle.record(g));
        burstGaps.observe(now, rps, burstThreshold).ifPresent(g -> bursts = bursts.record(g));
    }

    /**
     * Until when instances released at {@code now} stay parked: the last one ({@code last}) by the function's idle
     * times, others by the gaps between its bursts, each counted from the function's last activity of that kind.
     */
    public Instant keepReleasedUntil(Instant now, boolean last) {
        GapTracker tracker = last ? idleGaps : burstGaps;
        // A function still active by that measure is idle from now, as far as this release goes.
        Instant since = tracker.idleSince().orElse(now);
        return policy.decide(last ? idle : bursts, since, Duration.ZERO).keepUntil();
    }

    /** What the histograms say now, for logs and reports. */
    public String summary() {
        return "idle " + policy.pattern(idle) + "; bursts " + policy.pattern(bursts);
    }
}
