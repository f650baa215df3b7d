package io.dilu.simulator;

import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Places a list of instances in arrival order with one policy and measures what it cost. */
public final class PlacementSimulation {

    /**
     * @param gpus GPUs with at least one instance when all are placed: the cost
     * @param nodes nodes with at least one such GPU
     * @param smFragmentation mean unrequested SM share of the active GPUs, 0..1
     * @param memoryFragmentation mean unused memory share of the active GPUs, 0..1
     * @param infeasible instances no GPU could take, with the first few reasons
     */
    public record Result(String policy, int placed, int gpus, int nodes, double smFragmentation,
            double memoryFragmentation, int infeasible, List<String> reasons) {}

    private PlacementSimulation() {}

    public static Result run(PlacementPolicy policy, List<NodeInventory> nodes, List<InstanceRequest> requests) {
        ClusterState state = new ClusterState(nodes);
        int infeasible = 0;
        List<String> reasons = new ArrayList<>();
        for (InstanceRequest r : requests) {
            switch (policy.decide(state, r)) {
                case PlacementDecision.Placed placed -> state.apply(r.id(), r.function(), placed);
                case PlacementDecision.Infeasible no -> {
                    infeasible++;
                    if (reasons.size() < 5) {
                        reasons.add(r.id() + ": " + no.reason());
                    }
                }
            }
        }
        List<ClusterState.GpuUsage> active = state.activeUsage();
        Set<String> usedNodes = new HashSet<>();
        double freeSm = 0;
        double freeMemory = 0;
        for (ClusterState.GpuUsage u : active) {
            usedNodes.add(u.node());
            freeSm += Math.max(0, 1000 - u.requestMilli()) / 1000.0;
            freeMemory += (double) (u.capacityMib() - u.memoryMib()) / u.capacityMib();
        }
        int n = Math.max(1, active.size());
        return new Result(policy.name(), state.placedInstances(), active.size(), usedNodes.size(), freeSm / n,
                freeMemory / n, infeasible, reasons);
    }
}
