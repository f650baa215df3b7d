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

    public static Result run(RateTrace trace, FunctionProfile profile, CoScalingPolicy policy) {
        double[] rates = trace.rps();
        int[] instances = new int[rates.length];
        Deque<Integer> starting = new ArrayDeque<>(); // the second each starting instance is ready, oldest first
        int ready = 0;
        int coldStarts = 0;
        double backlog = 0;
        double violations = 0;
        double gpuSeconds = 0;
        for (int t = 0; t < rates.length; t++) {
            while (!starting.isEmpty() && starting.peekFirst() <= t) {
                starting.removeFirst();
                ready++;
            }
            int wanted = Math.max(0, policy.desired(rates, t, ready, starting.size()));
            int have = ready + starting.size();
            for (int i = have; i < wanted; i++) {
                starting.addLast(t + profile.coldStartSeconds());
                coldStarts++;
            }
            for (int i = wanted; i < have; i++) {
                if (!starting.isEmpty()) {
                    starting.removeLast();
                } else {
                    ready--;
                }
            }
            if (profile.coldStartSeconds() == 0) {
                ready += starting.size();
                starting.clear();
            }
            double rate = policy.serviceRate(ready, backlog + rates[t]);
            FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
            backlog = step.backlog();
            violations += step.violations();
            instances[t] = ready + starting.size();
            gpuSeconds += instances[t] * policy.bookedShare();
        }
        return new Result(policy.name(), coldStarts, trace.total(), violations + backlog, gpuSeconds, instances);
    }
}
