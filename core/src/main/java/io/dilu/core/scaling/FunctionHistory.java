package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;

/**
 * What one function's own history says about how long an instance it no longer needs should stay parked ({@link
 * RevisionScaler}): Shahrad et al.'s hybrid histogram ({@link KeepAlive}) over its idle times — from its last request
 * to its next — and over the gaps between its bursts — spells when the demand was beyond what one instance serves at
 * its SM limit. Fed every tick with the tick's rate; explicitly owned mutable state, one per function, kept by the
 * caller between ticks. What it has learned ({@link Snapshot}: both trackers and both histograms) can be taken out and
 * put back, so that an autoscaler's new leader decides as the old one would have ({@link LearnedHistory}).
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
        this(idleMinGap, burstMinGap, Snapshot.empty());
    }

    /** A history that goes on from what {@link #snapshot()} gave; its histograms must be in {@link #PARAMETERS}' bins. */
    public FunctionHistory(Duration idleMinGap, Duration burstMinGap, Snapshot learned) {
        this.idleGaps = new GapTracker(idleMinGap, learned.idleTracker());
        this.burstGaps = new GapTracker(burstMinGap, learned.burstTracker());
        this.idle = learned.idle();
        this.bursts = learned.bursts();
    }

    /**
     * What a history has learned: each tracker's state (the decision reads since when the function is idle from it)
     * and each histogram. The minimum gaps are not part of it: they follow from the revision's knobs, read afresh.
     */
    public record Snapshot(GapTracker.State idleTracker, GapHistogram idle, GapTracker.State burstTracker,
            GapHistogram bursts) {

        public Snapshot {
            if (idleTracker == null || burstTracker == null) {
                throw new IllegalArgumentException("both trackers' states are needed");
            }
            for (GapHistogram h : new GapHistogram[] {idle, bursts}) {
                if (h == null || !h.bin().equals(PARAMETERS.bin()) || !h.range().equals(PARAMETERS.range())) {
                    throw new IllegalArgumentException("histograms must have bin " + PARAMETERS.bin() + " and range "
                            + PARAMETERS.range() + ", got " + (h == null ? null : h.bin() + " and " + h.range()));
                }
            }
        }

        /** A history that has learned nothing. */
        public static Snapshot empty() {
            GapHistogram none = GapHistogram.empty(PARAMETERS.bin(), PARAMETERS.range());
            return new Snapshot(GapTracker.State.EMPTY, none, GapTracker.State.EMPTY, none);
        }
    }

    /** What this history has learned so far (histograms are immutable: nothing shared changes later). */
    public Snapshot snapshot() {
        return new Snapshot(idleGaps.state(), idle, burstGaps.state(), bursts);
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
