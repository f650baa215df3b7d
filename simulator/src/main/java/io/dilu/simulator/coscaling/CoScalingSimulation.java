package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;

/**
 * One function's trace under one policy, second by second: the policy decides how many instances it wants serving
 * and how many parked, from the rates seen so far; a new instance serves after the profile's cold start (each start
 * is a cold start), a parked one woken serves after the wake ({@link #WAKE_SECONDS} unless told; the part of its
 * wake's second after it too); the requests queue on the ready
 * instances' service rate ({@link FluidQueue}); every instance holds its share of a GPU — the booked one while starting
 * or waking, what the policy's vertical scaling gives it once ready, none while parked — and its memory throughout.
 *
 * <p>Order within a second: instances whose cold start or wake has elapsed become ready; the policy decides (parked
 * instances are woken first, new instances start for the rest; surplus ones stop — starting ones first, the newest
 * first — and ready ones it parks are parked, the others go); the second's requests are served. Requests still
 * waiting when the trace ends count as SLO violations. The function has GPUs of its own, so a wake always finds room;
 * {@link CoScalingFleet} runs the same second ({@link FunctionRun}) for many functions on one pool.
 */
public final class CoScalingSimulation {

    /**
     * From the decision to wake a parked instance to its serving, unless a run says otherwise: the mean of the wakes
     * measured on the local cluster's real kubelets and containerd (LocalClusterIT, 2026-11-28: 0.58, 0.76, 0.79, 0.78,
     * 0.83 s from the autoscaler's write to the model's answer; docs/benchmarks.md, "parking"). {@code ./dilu bench
     * coscaling-cluster} measures it again ({@code wake_s}) and runs its model on what it measured.
     */
    public static final double WAKE_SECONDS = 0.75;

    private CoScalingSimulation() {}

    /**
     * What the instances cost, booked honestly: a parked instance holds no SM, only its memory.
     *
     * @param scaleOutColdStarts cold starts after the deployment at t=0 (a new instance asked for by a scale-out)
     * @param failedWakeColdStarts cold starts of an instance whose wake found its GPU full (none for one function
     *     alone on its GPUs; {@link CoScalingFleet} has them)
     * @param wakes parked instances woken
     * @param wakeSeconds from a wake's decision to its instance serving, summed over the wakes
     * @param memoryGibSeconds Σ over seconds of the GPU memory every instance holds (starting, serving, parked)
     * @param dominantGpuSeconds Σ over seconds and instances of the larger of its SM share and its memory share of
     *     its GPU (Ghodsi et al., DRF, NSDI'11): what an instance keeps others from, whichever resource that is
     */
    public record Books(int scaleOutColdStarts, int failedWakeColdStarts, int wakes, double wakeSeconds,
            double memoryGibSeconds, double dominantGpuSeconds) {

        /** Cold starts after the deployment: scale-outs and failed wakes. */
        public int coldStarts() {
            return scaleOutColdStarts + failedWakeColdStarts;
        }

        /** The mean wake, in seconds; 0 without one. */
        public double meanWakeSeconds() {
            return wakes == 0 ? 0 : wakeSeconds / wakes;
        }

        /**
         * The books of a measured run (the cluster bench, the demo), from what existed each second: {@code instances[t]}
         * pods, of which {@code smShare[t] / requestShare} booked their SM request and the rest were parked; every pod
         * holds {@code memoryMib} of a GPU of {@code gpuMemoryMib}.
         */
        public static Books measured(int scaleOutColdStarts, int failedWakeColdStarts, int wakes, double wakeSeconds,
                int[] instances, double[] smShare, double requestShare, long memoryMib, long gpuMemoryMib) {
            double memoryShare = (double) memoryMib / gpuMemoryMib;
            double memoryMibSeconds = 0;
            double dominant = 0;
            for (int t = 0; t < instances.length; t++) {
                long serving = Math.round(smShare[t] / requestShare);
                memoryMibSeconds += (double) instances[t] * memoryMib;
                dominant += serving * Math.max(requestShare, memoryShare) + (instances[t] - serving) * memoryShare;
            }
            return new Books(scaleOutColdStarts, failedWakeColdStarts, wakes, wakeSeconds, memoryMibSeconds / 1024, dominant);
        }
    }

    /**
     * @param coldStarts instances started (each waited its cold start), the deployment at t=0 included
     * @param requests requests that arrived
     * @param violations of those, served later than the SLO or never
     * @param gpuSeconds Σ over seconds of the GPU share held by every instance: SM GPU-seconds (a parked one holds 0)
     * @param instances instances (starting, serving or parked) in each second
     * @param share GPUs' worth of SM held by the function's instances in each second
     * @param late requests served late or left waiting in each second (the SLO violations, second by second)
     * @param books the rest of the books ({@link Books})
     */
    public record Result(String policy, int coldStarts, double requests, double violations, double gpuSeconds,
            int[] instances, double[] share, double[] late, Books books) {

        /** SLO violation rate: violations over requests (0 without requests). */
        public double violationRate() {
            return requests == 0 ? 0 : violations / requests;
        }

        public int peakInstances() {
            return java.util.Arrays.stream(instances).max().orElse(0);
        }

        public double meanInstances() {
            return java.util.Arrays.stream(instances).average().orElse(0);
        }
    }

    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy) {
        return run(trace, profile, policy, 0);
    }

    /** As {@link #run(RateTrace, FunctionProfile, CoScalingPolicy, int, double)}, waking in {@link #WAKE_SECONDS}. */
    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy, int warm) {
        return run(trace, profile, policy, warm, WAKE_SECONDS);
    }

    /**
     * As {@link #run(RateTrace, FunctionProfile, CoScalingPolicy)}, with {@code warm} instances ready when the
     * trace begins (not cold starts): a measured run that sends its traffic once the function serves; a parked
     * instance woken serves {@code wakeSeconds} after its decision.
     */
    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy, int warm, double wakeSeconds) {
        FunctionRun run = new FunctionRun(trace.name(), trace.rps(), profile, policy, warm, wakeSeconds,
                FunctionRun.Pool.OWN_GPUS);
        for (int t = 0; t < trace.seconds(); t++) {
            run.step(t);
        }
        return run.result(trace.total());
    }
}
