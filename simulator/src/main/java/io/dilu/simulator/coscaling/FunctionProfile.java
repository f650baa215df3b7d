package io.dilu.simulator.coscaling;

/**
 * What the co-scaling simulator knows of a function, in the GpuFunctionProfile's terms.
 *
 * @param name what the figures call it
 * @param sloSeconds latency bound of a request
 * @param serviceSeconds one batch's run time at the SM request: the latency of a request that does not wait
 * @param rpsAtRequest requests per second one instance serves at its SM request
 * @param rpsAtLimit requests per second one instance serves at its SM limit (≥ rpsAtRequest: SM has
 *     diminishing returns, paper §3.1)
 * @param requestShare SM request, share of a GPU
 * @param limitShare SM limit, share of a GPU
 * @param rpsAtWholeGpu requests per second one instance serves with a whole GPU (≥ rpsAtLimit)
 * @param coldStartSeconds from the decision to start an instance to its serving
 * @param memoryMiB GPU memory one instance holds; 0 when unknown (the mid-size model says none)
 */
public record FunctionProfile(String name, double sloSeconds, double serviceSeconds, double rpsAtRequest, double rpsAtLimit,
        double requestShare, double limitShare, double rpsAtWholeGpu, int coldStartSeconds, long memoryMiB) {

    /** The cold start a profile gets unless told otherwise: the mid-size model's. */
    public static final int DEFAULT_COLD_START_SECONDS = 8;

    /** A profile whose memory is unknown. */
    public FunctionProfile(String name, double sloSeconds, double serviceSeconds, double rpsAtRequest, double rpsAtLimit,
            double requestShare, double limitShare, double rpsAtWholeGpu, int coldStartSeconds) {
        this(name, sloSeconds, serviceSeconds, rpsAtRequest, rpsAtLimit, requestShare, limitShare, rpsAtWholeGpu,
                coldStartSeconds, 0);
    }

    public FunctionProfile {
        if (!(sloSeconds > 0) || !(serviceSeconds >= 0) || !(rpsAtRequest > 0) || !(rpsAtLimit >= rpsAtRequest)
                || Double.isInfinite(rpsAtLimit)) {
            throw new IllegalArgumentException("need sloSeconds > 0, serviceSeconds >= 0 and 0 < rpsAtRequest <= rpsAtLimit,"
                    + " got " + sloSeconds + ", " + serviceSeconds + ", " + rpsAtRequest + ", " + rpsAtLimit);
        }
        if (!(rpsAtWholeGpu >= rpsAtLimit) || Double.isInfinite(rpsAtWholeGpu)) {
            throw new IllegalArgumentException("need rpsAtWholeGpu >= rpsAtLimit, got " + rpsAtWholeGpu);
        }
        if (!(requestShare > 0) || !(limitShare >= requestShare) || limitShare > 1) {
            throw new IllegalArgumentException("need 0 < requestShare <= limitShare <= 1, got " + requestShare + ", " + limitShare);
        }
        if (coldStartSeconds < 0) {
            throw new IllegalArgumentException("coldStartSeconds must be >= 0, got " + coldStartSeconds);
        }
        if (memoryMiB < 0) {
            throw new IllegalArgumentException("memoryMiB must be >= 0, got " + memoryMiB);
        }
    }

    /** The same function with another cold start. */
    public FunctionProfile withColdStart(int seconds) {
        return new FunctionProfile(name, sloSeconds, serviceSeconds, rpsAtRequest, rpsAtLimit, requestShare, limitShare,
                rpsAtWholeGpu, seconds, memoryMiB);
    }

    /**
     * What the bench and the report say of the profile: "SLO 200 ms, a batch 50.0 ms, 50.0 rps at 20% SM, 80.0 rps at
     * 40%, 110 rps with a whole GPU, cold start 8 s".
     */
    public String summary() {
        return String.format(java.util.Locale.ROOT, "SLO %.0f ms, a batch %.1f ms, %.1f rps at %.0f%% SM, %.1f rps at %.0f%%, "
                        + "%.0f rps with a whole GPU, cold start %d s", sloSeconds * 1000, serviceSeconds * 1000, rpsAtRequest,
                requestShare * 100, rpsAtLimit, limitShare * 100, rpsAtWholeGpu, coldStartSeconds);
    }

    /**
     * The profile a trace gets when nothing else is said: a mid-size model in the shape of the paper's
     * profiles (Figure 6: request at the knee of the throughput curve, limit at twice the request, §3.1), a
     * 200 ms SLO with a 50 ms batch (t_exec well under SLO / 2), 50 rps at 20% SM, 80 rps at 40% and 110 rps
     * with the whole GPU (diminishing returns), and an 8 s cold start (container start and model load of a few
     * hundred MB).
     */
    public static FunctionProfile midSize(String name) {
        return new FunctionProfile(name, 0.2, 0.05, 50, 80, 0.2, 0.4, 110, DEFAULT_COLD_START_SECONDS);
    }
}
