package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * One function's trace under one policy, second by second: the policy decides how many instances it wants
 * from the rates seen so far; a new instance serves after the profile's cold start (each start is a cold
 * start); the requests queue on the ready instances' service rate ({@link FluidQueue}); every instance
 * holds its share of a GPU: the booked one while starting, what the policy's vertical scaling gives it once
 * ready.
 *
 * <p>Order within a second: instances whose cold start has elapsed become ready; the policy decides (new
 * instances start now, surplus ones stop — starting ones first, the newest first); the second's requests are
 * served. Requests still waiting when the trace ends count as SLO violations.
 */
public final class CoScalingSimulation {

    private CoScalingSimulation() {}

    /**
     * @param coldStarts instances started (each waited its cold start)
     * @param requests requests that arrived
     * @param violations of those, served later than the SLO or never
     * @param gpuSeconds Σ over seconds of the GPU share held by every instance
     * @param instances instances (starting or ready) in each second
     * @param share GPUs' worth of SM held by the function's instances in each second
     * @param late requests served late or left waiting in each second (the SLO violations, second by second)
     */
    public record Result(String policy, int coldStarts, double requests, double violations, double gpuSeconds,
            int[] instances, double[] share, double[] late) {

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

    /** A function's instances: the ready ones, and the second each starting one becomes ready, oldest first. */
    private static final class Fleet {
        final Deque<Integer> starting = new ArrayDeque<>();
        int ready;

        void promote(int now) {
            while (!starting.isEmpty() && starting.peekFirst() <= now) {
                starting.removeFirst();
                ready++;
            }
        }

        /** Stops the newest starting instance, or a ready one when none is starting. */
        void stopOne() {
            if (!starting.isEmpty()) {
                starting.removeLast();
            } else {
                ready--;
            }
        }

        int size() {
            return ready + starting.size();
        }
    }

    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy) {
        return run(trace, profile, policy, 0);
    }

    /**
     * As {@link #run(RateTrace, FunctionProfile, CoScalingPolicy)}, with {@code warm} instances ready when the
     * trace begins (not cold starts): a measured run that sends its traffic once the function serves.
     */
    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy, int warm) {
        if (warm < 0) {
            throw new IllegalArgumentException("warm must be >= 0, got " + warm);
        }
        double[] rates = trace.rps();
        int[] instances = new int[rates.length];
        Fleet fleet = new Fleet();
        fleet.ready = warm;
        int coldStarts = 0;
        double backlog = 0;
        double violations = 0;
        double gpuSeconds = 0;
        double[] share = new double[rates.length];
        double[] late = new double[rates.length];
        for (int t = 0; t < rates.length; t++) {
            fleet.promote(t);
            int wanted = Math.max(0, policy.desired(rates, t, fleet.ready, fleet.starting.size()));
            int have = fleet.size();
            for (int i = have; i < wanted; i++) {
                fleet.starting.addLast(t + profile.coldStartSeconds());
                coldStarts++;
            }
            for (int i = wanted; i < have; i++) {
                fleet.stopOne();
            }
            fleet.promote(t); // an instance without a cold start serves the second it starts in
            double demand = backlog + rates[t];
            double rate = policy.serviceRate(fleet.ready, demand);
            FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
            backlog = step.backlog();
            violations += step.violations();
            late[t] = step.violations();
            instances[t] = fleet.size();
            share[t] = fleet.starting.size() * policy.bookedShare() + fleet.ready * policy.heldShare(fleet.ready, demand);
            gpuSeconds += share[t];
        }
        if (rates.length > 0) {
            late[rates.length - 1] += backlog;
        }
        return new Result(policy.name(), coldStarts, trace.total(), violations + backlog, gpuSeconds, instances, share, late);
    }
}
