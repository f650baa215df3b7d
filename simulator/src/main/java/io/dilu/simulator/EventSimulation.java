package io.dilu.simulator;

import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * Replays an event list with one policy (the paper's Figure 20): a start is placed as it arrives, a stop
 * frees what its instance held. A GPU is active while at least one instance is on it — Algorithm 1's
 * G_act — and counts as soon as its last instance leaves no more: an idle GPU can be given back (to a
 * cluster autoscaler, another tenant, or powered down), so holding it is a choice the policy did not need to
 * make. A new GPU is opened only when no active one fits the instance, as each policy's own rule says.
 */
public final class EventSimulation {

    /** Active GPUs from {@code timeS} on, until the next point. */
    public record Point(double timeS, int activeGpus) {}

    /**
     * @param peakGpus most GPUs active at once
     * @param meanGpus active GPUs averaged over time, from the first event to the last
     * @param smFragmentationAtPeak mean unrequested SM share of the active GPUs at the peak, 0..1
     * @param memoryFragmentationAtPeak mean unused memory share of the active GPUs at the peak, 0..1
     * @param unplaced starts no GPU could take (their stops are ignored)
     * @param series active GPUs after every event that changed them
     */
    public record Result(String policy, int peakGpus, double peakTimeS, double meanGpus, double smFragmentationAtPeak,
            double memoryFragmentationAtPeak, int unplaced, List<Point> series) {}

    private EventSimulation() {}

    public static Result run(PlacementPolicy policy, List<NodeInventory> nodes, List<EventCsv.Event> events) {
        ClusterState state = new ClusterState(nodes);
        List<Point> series = new ArrayList<>();
        int peak = 0;
        double peakTime = 0;
        double smFrag = 0;
        double memFrag = 0;
        int unplaced = 0;
        double area = 0;
        double start = events.getFirst().timeS();
        double last = start;
        int active = 0;
        for (EventCsv.Event e : events) {
            area += active * (e.timeS() - last);
            last = e.timeS();
            switch (e) {
                case EventCsv.Start s -> {
                    InstanceRequest r = s.asked().toRequest();
                    switch (policy.decide(state, r)) {
                        case PlacementDecision.Placed placed -> state.apply(r.id(), r.function(), placed);
                        case PlacementDecision.Infeasible no -> unplaced++;
                    }
                }
                case EventCsv.Stop s -> state.release(s.instance());
            }
            int now = state.activeGpuCount();
            if (now != active) {
                active = now;
                series.add(new Point(e.timeS(), active));
            }
            if (active > peak) {
                peak = active;
                peakTime = e.timeS();
                double[] fragmentation = fragmentation(state);
                smFrag = fragmentation[0];
                memFrag = fragmentation[1];
            }
        }
        double span = last - start;
        double mean = span > 0 ? area / span : active;
        return new Result(policy.name(), peak, peakTime, mean, smFrag, memFrag, unplaced, series);
    }

    private static double[] fragmentation(ClusterState state) {
        List<ClusterState.GpuUsage> usage = state.activeUsage();
        double sm = 0;
        double memory = 0;
        for (ClusterState.GpuUsage u : usage) {
            sm += Math.max(0, 1000 - u.requestMilli()) / 1000.0;
            memory += (double) (u.capacityMib() - u.memoryMib()) / u.capacityMib();
        }
        int n = Math.max(1, usage.size());
        return new double[] {sm / n, memory / n};
    }
}
