package io.dilu.simulator.coscaling;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * One function's trace under one policy, second by second: the policy decides how many instances it wants
 * from the rates seen so far; a new instance serves after the profile's cold start (each start is a cold
 * start); the requests queue on the ready instances' service rate ({@link FluidQueue}); every instance,
 * starting or ready, books its share of a GPU.
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
     * @param gpuSeconds Σ over seconds of the GPU share booked by every instance
     * @param instances instances (starting or ready) in each second
     */
    public record Result(String policy, int coldStarts, double requests, double violations, double gpuSeconds,
            int[] instances) {

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
        double[] rates = trace.rps();
        int[] instances = new int[rates.length];
        Fleet fleet = new Fleet();
        int coldStarts = 0;
        double backlog = 0;
        double violations = 0;
        double gpuSeconds = 0;
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
            double rate = policy.serviceRate(fleet.ready, backlog + rates[t]);
            FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
            backlog = step.backlog();
            violations += step.violations();
            instances[t] = fleet.size();
            gpuSeconds += instances[t] * policy.bookedShare();
        }
        return new Result(policy.name(), coldStarts, trace.total(), violations + backlog, gpuSeconds, instances);
    }
}
