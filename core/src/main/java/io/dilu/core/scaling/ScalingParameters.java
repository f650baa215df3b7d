package io.dilu.core.scaling;

/**
 * The knobs of lazy horizontal scaling (the paper, §3.4.2) and of the burst guard beside it.
 *
 * @param windowSeconds per-second request-rate samples kept (40)
 * @param phiOut scale out when at least this many samples exceed what the running instances serve (20)
 * @param phiIn scale in when more than this many samples fall below what one instance fewer serves (30)
 * @param minScale fewest instances, 0 allows scale to zero
 * @param maxScale most instances
 * @param burstWindowSeconds the short window of the burst guard: scale out at once when the demand over its
 *     latest seconds is beyond what the instances serve at their SM limits; 0 turns the guard off (the paper's
 *     rule). Default {@link #burstWindowFor}: {@value #BURST_WINDOW_PERCENT}% of the window, as Knative's panic
 *     window is 10% of its stable window (config-autoscaler's {@code panic-window-percentage}), so 4 s of 40.
 */
public record ScalingParameters(int windowSeconds, int phiOut, int phiIn, int minScale, int maxScale,
        int burstWindowSeconds) {

    /** The burst guard's window as a percentage of the lazy window: Knative's panic-window-percentage default. */
    public static final double BURST_WINDOW_PERCENT = 10.0;

    /** As the autoscaler ships: the paper's lazy rule (40 s, φ_out 20, φ_in 30) with the burst guard. */
    public static final ScalingParameters DEFAULTS = new ScalingParameters(40, 20, 30, 0, 1000, burstWindowFor(40));

    /** The paper's rule alone (§3.4.2), without the burst guard: to reproduce the paper's behaviour. */
    public static final ScalingParameters PAPER = DEFAULTS.withoutBurstGuard();

    public ScalingParameters {
        if (windowSeconds < 1) {
            throw new IllegalArgumentException("windowSeconds must be at least 1, got " + windowSeconds);
        }
        if (phiOut < 1 || phiOut > windowSeconds) {
            throw new IllegalArgumentException("phiOut must be in 1.." + windowSeconds + " (the window), got " + phiOut);
        }
        if (phiIn < 0 || phiIn >= windowSeconds) {
            throw new IllegalArgumentException("phiIn must be in 0.." + (windowSeconds - 1) + ", got " + phiIn);
        }
        if (phiOut + phiIn <= windowSeconds) {
            // Otherwise one window could ask for both directions at once and the scaler would flap.
            throw new IllegalArgumentException("phiOut + phiIn must exceed windowSeconds (" + windowSeconds
                    + "), got " + phiOut + " + " + phiIn);
        }
        if (minScale < 0) {
            throw new IllegalArgumentException("minScale must be >= 0, got " + minScale);
        }
        if (maxScale < Math.max(1, minScale)) {
            throw new IllegalArgumentException("maxScale must be in " + Math.max(1, minScale) + "..(any), got " + maxScale);
        }
        if (burstWindowSeconds < 0 || burstWindowSeconds > windowSeconds) {
            throw new IllegalArgumentException("burstWindowSeconds must be in 0.." + windowSeconds
                    + " (0: no burst guard; at most the window), got " + burstWindowSeconds);
        }
    }

    /** The burst guard's window for a lazy window of {@code windowSeconds}: {@value #BURST_WINDOW_PERCENT}% of it, at least 1 s. */
    public static int burstWindowFor(int windowSeconds) {
        return Math.max(1, (int) Math.round(windowSeconds * BURST_WINDOW_PERCENT / 100));
    }

    /** Whether the burst guard is on. */
    public boolean burstGuard() {
        return burstWindowSeconds > 0;
    }

    public ScalingParameters withoutBurstGuard() {
        return new ScalingParameters(windowSeconds, phiOut, phiIn, minScale, maxScale, 0);
    }

    public ScalingParameters withScaleBounds(int min, int max) {
        return new ScalingParameters(windowSeconds, phiOut, phiIn, min, max, burstWindowSeconds);
    }

    /**
     * The same scaler over a window of {@code seconds}, its thresholds scaled in proportion (the paper's 20 and 30
     * of 40 become 30 and 45 of 60), and kept such that one window cannot ask for both directions; the burst
     * guard's window stays its percentage of the window (off stays off).
     */
    public ScalingParameters withWindow(int seconds) {
        if (seconds == windowSeconds) {
            return this;
        }
        int out = Math.clamp(Math.round((double) phiOut * seconds / windowSeconds), 1, seconds);
        int in = Math.clamp(Math.round((double) phiIn * seconds / windowSeconds), 0, seconds - 1);
        if (out + in <= seconds) {
            in = Math.min(seconds - 1, seconds - out + 1);
            out = Math.max(out, seconds + 1 - in);
        }
        return new ScalingParameters(seconds, out, in, minScale, maxScale, burstGuard() ? burstWindowFor(seconds) : 0);
    }
}
