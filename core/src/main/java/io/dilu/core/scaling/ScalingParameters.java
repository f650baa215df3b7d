package io.dilu.core.scaling;

/**
 * The knobs of lazy horizontal scaling (the paper, §3.4.2).
 *
 * @param windowSeconds per-second request-rate samples kept (40)
 * @param phiOut scale out when at least this many samples exceed what the running instances serve (20)
 * @param phiIn scale in when more than this many samples fall below what one instance fewer serves (30)
 * @param minScale fewest instances, 0 allows scale to zero
 * @param maxScale most instances
 */
public record ScalingParameters(int windowSeconds, int phiOut, int phiIn, int minScale, int maxScale) {

    public static final ScalingParameters DEFAULTS = new ScalingParameters(40, 20, 30, 0, 1000);

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
    }

    public ScalingParameters withScaleBounds(int min, int max) {
        return new ScalingParameters(windowSeconds, phiOut, phiIn, min, max);
    }

    /**
     * The same scaler over a window of {@code seconds}, its thresholds scaled in proportion (the paper's 20 and 30
     * of 40 become 30 and 45 of 60), and kept such that one window cannot ask for both directions.
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
        return new ScalingParameters(seconds, out, in, minScale, maxScale);
    }
}
