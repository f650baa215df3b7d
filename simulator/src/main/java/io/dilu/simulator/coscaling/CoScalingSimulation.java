package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.RevisionScaler;
import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.ClusterShape;
import java.util.ArrayDeque;
import java.util.Deque;

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
 * waiting when the trace ends count as SLO violations.
 */
public final class CoScalingSimulation {

    /**
     * From the decision to wake a parked instance to its serving, unless a run says otherwise: a whole tick, the most
     * the product allows itself (issue 35's target); the local cluster measures the wake ({@code ./dilu bench
     * coscaling-cluster}'s {@code wake_s}), and its model runs on what was measured.
     */
    public static final double WAKE_SECONDS = 1.0;

    private CoScalingSimulation() {}

    /**
     * What the instances cost, booked honestly: a parked instance holds no SM, only its memory.
     *
     * @param scaleOutColdStarts cold starts after the deployment at t=0 (a new instance asked for by a scale-out)
     * @param failedWakeColdStarts cold starts of an instance whose wake found its GPU full (none for one function
     *     alone on its GPUs; the fleet bench has them)
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

    /** A function's instances: the ready ones, the seconds starting and waking ones serve from, the parked ones. */
    private static final class Fleet {
        final Deque<Integer> starting = new ArrayDeque<>();
        /** When each waking instance serves, in seconds (a wake takes part of a second). */
        final Deque<Double> waking = new ArrayDeque<>();
        int ready;
        int parked;

        void promote(int now) {
            while (!starting.isEmpty() && starting.peekFirst() <= now) {
                starting.removeFirst();
                ready++;
            }
            while (!waking.isEmpty() && waking.peekFirst() <= now + 1e-9) {
                waking.removeFirst();
                ready++;
            }
        }

        /** Of the second {@code now}, the part the waking instances serve in it: 0.4 for a wake done at now + 0.6. */
        double wakingPart(int now) {
            double part = 0;
            for (double at : waking) {
                part += Math.max(0, now + 1 - at);
            }
            return part;
        }

        /** Serving instances: ready, or on their way (starting, waking). */
        int serving() {
            return ready + starting.size() + waking.size();
        }

        int size() {
            return serving() + parked;
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
        if (warm < 0) {
            throw new IllegalArgumentException("warm must be >= 0, got " + warm);
        }
        if (!(wakeSeconds >= 0 && wakeSeconds <= 60)) {
            throw new IllegalArgumentException("wakeSeconds must be in 0..60, got " + wakeSeconds);
        }
        double[] rates = trace.rps();
        int[] instances = new int[rates.length];
        Fleet fleet = new Fleet();
        fleet.ready = warm;
        int coldStarts = 0;
        int scaleOuts = 0;
        int wakes = 0;
        double wakeTime = 0;
        double backlog = 0;
        double violations = 0;
        double gpuSeconds = 0;
        double memoryMibSeconds = 0;
        double dominant = 0;
        double memoryShare = (double) profile.memoryMiB() / ClusterShape.PAPER.gpuMemoryMib();
        double[] share = new double[rates.length];
        double[] late = new double[rates.length];
        for (int t = 0; t < rates.length; t++) {
            fleet.promote(t);
            RevisionScaler.Decision d = policy.decide(rates, t, fleet.ready, fleet.starting.size() + fleet.waking.size(),
                    fleet.parked);
            int serving = fleet.serving();
            for (int i = serving; i < d.desired(); i++) {
                if (fleet.parked > 0) {
                    fleet.parked--;
                    // With nothing serving, the last parked instance is still in the request path: it serves at once
                    // (from the GPU's idle SMs) while its wake books its share back.
                    double wake = serving == 0 && i == 0 ? 0 : wakeSeconds;
                    fleet.waking.addLast(t + wake);
                    wakes++;
                    wakeTime += wake;
                } else {
                    fleet.starting.addLast(t + profile.coldStartSeconds());
                    coldStarts++;
                    scaleOuts += t > 0 ? 1 : 0;
                }
            }
            for (int i = d.desired(); i < serving; i++) {
                // The newest of those on their way go first; a ready instance released is parked if the policy says.
                if (!fleet.starting.isEmpty()) {
                    fleet.starting.removeLast();
                } else if (!fleet.waking.isEmpty()) {
                    fleet.waking.removeLast();
                    fleet.parked++;
                } else {
                    fleet.ready--;
                    fleet.parked++;
                }
            }
            fleet.parked = Math.min(fleet.parked, d.parked()); // those it no longer wants go
            fleet.promote(t); // an instance without a cold start serves the second it starts in
            double demand = backlog + rates[t];
            // Instances woken this second serve the part of it after their wake: the rate of the ready ones and as
            // many more, a part of one between two whole counts.
            double waking = fleet.wakingPart(t);
            int whole = fleet.ready + (int) waking;
            double rate = policy.serviceRate(whole, demand)
                    + (waking - (int) waking) * (policy.serviceRate(whole + 1, demand) - policy.serviceRate(whole, demand));
            FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
            backlog = step.backlog();
            violations += step.violations();
            late[t] = step.violations();
            instances[t] = fleet.size();
            int onTheirWay = fleet.starting.size() + fleet.waking.size();
            double held = fleet.ready == 0 ? 0 : policy.heldShare(fleet.ready, demand);
            share[t] = onTheirWay * policy.bookedShare() + fleet.ready * held;
            gpuSeconds += share[t];
            memoryMibSeconds += (double) fleet.size() * profile.memoryMiB();
            dominant += onTheirWay * Math.max(policy.bookedShare(), memoryShare) + fleet.ready * Math.max(held, memoryShare)
                    + fleet.parked * memoryShare;
        }
        if (rates.length > 0) {
            late[rates.length - 1] += backlog;
        }
        Books books = new Books(scaleOuts, 0, wakes, wakeTime, memoryMibSeconds / 1024, dominant);
        return new Result(policy.name(), coldStarts, trace.total(), violations + backlog, gpuSeconds, instances, share,
                late, books);
    }
}
