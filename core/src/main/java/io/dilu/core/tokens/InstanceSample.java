package io.dilu.core.tokens;

/**
 * What the node agent read from one instance's control block for the period that just ended.
 *
 * @param id the instance (container) on this GPU
 * @param sloSensitive whether latency matters ({@code dilu.io/priority: slo}) or the instance is best-effort
 * @param request guaranteed SM share, fraction of the GPU (0..1]
 * @param limit most SM share, fraction of the GPU, request..1
 * @param blocksLaunched thread blocks launched during the period
 * @param klcMillis the latest kernel launch cycle, in milliseconds, or {@code NaN} when none completed
 * @param klcThreshold the ratio T/Tmin of this instance's launch cycle above which its latency is being hurt
 *     (an EMERGENCY), or {@code NaN} for the controller's default ({@link TokenParameters#etaViolation})
 * @param parked the instance is parked ({@code dilu.io/parked}): its SM request is not booked, so nothing is
 *     guaranteed to it and it runs only on what the booked instances of its GPU leave unused ({@link TokenController})
 */
public record InstanceSample(String id, boolean sloSensitive, double request, double limit, long blocksLaunched,
        double klcMillis, double klcThreshold, boolean parked) {

    /** A booked (not parked) instance. */
    public InstanceSample(String id, boolean sloSensitive, double request, double limit, long blocksLaunched,
            double klcMillis, double klcThreshold) {
        this(id, sloSensitive, request, limit, blocksLaunched, klcMillis, klcThreshold, false);
    }

    /** A booked instance judged by the controller's default threshold. */
    public InstanceSample(String id, boolean sloSensitive, double request, double limit, long blocksLaunched,
            double klcMillis) {
        this(id, sloSensitive, request, limit, blocksLaunched, klcMillis, Double.NaN, false);
    }

    public InstanceSample {
        if (!(request > 0 && request <= 1)) {
            throw new IllegalArgumentException("request must be in (0, 1], got " + request);
        }
        if (!(limit >= request && limit <= 1)) {
            throw new IllegalArgumentException("limit must be in request (" + request + ")..1, got " + limit);
        }
        if (blocksLaunched < 0) {
            throw new IllegalArgumentException("blocksLaunched must be >= 0, got " + blocksLaunched);
        }
        if (klcMillis <= 0) {
            throw new IllegalArgumentException("klcMillis must be > 0 or NaN, got " + klcMillis);
        }
        if (!Double.isNaN(klcThreshold) && !(klcThreshold > 1 && klcThreshold <= TokenParameters.MAX_KLC_THRESHOLD)) {
            throw new IllegalArgumentException("klcThreshold must be in (1, " + TokenParameters.MAX_KLC_THRESHOLD
                    + "] or NaN, got " + klcThreshold);
        }
    }
}
