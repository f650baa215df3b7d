package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.List;

/**
 * Baseline: every GPU an instance touches is its own (Kubernetes' {@code nvidia.com/gpu}); the GPU books only
 * the instance's own shares, so what it leaves unused shows up as fragmentation. Nodes are
 * filled before new ones are opened, as a bin-packing scheduler would. A CPU-only request goes where
 * {@link HostFit} puts it.
 */
public final class ExclusivePlacement implements PlacementPolicy {

    @Override
    public String name() {
        return "exclusive";
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        if (req.cpuOnly()) {
            return HostFit.decide(state, req, null, PlacementParameters.DEFAULTS.alpha(), PlacementParameters.DEFAULTS.beta());
        }
        if (req.memoryMib() > state.largestGpuMemoryMib()) {
            return new PlacementDecision.Infeasible("needs " + req.memoryMib() + " MiB per GPU; the largest GPU has "
                    + state.largestGpuMemoryMib() + " MiB");
        }
        int bestNode = -1;
        int bestIdleLeft = Integer.MAX_VALUE;
        ClusterState.OrdinalSet partial = state.partialNodes();
        List<Integer> nodes = new ArrayList<>(partial.size() + 4);
        for (int i = 0; i < partial.size(); i++) {
            nodes.add(partial.get(i));
        }
        nodes.addAll(state.emptyNodeRepresentatives(null));
        for (int n : nodes) {
            if (!state.hostFits(n, req)) {
                continue;
            }
            int idleFitting = 0;
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if (!state.isActive(g) && state.gpu(g).memoryMib() >= req.memoryMib() && req.runsOn(state.gpu(g))) {
                    idleFitting++;
                }
            }
            // Best fit on nodes: the one left with the fewest idle GPUs, so big holes stay whole.
            int left = idleFitting - req.gpus();
            if (left >= 0 && (left < bestIdleLeft || (left == bestIdleLeft && n < bestNode))) {
                bestIdleLeft = left;
                bestNode = n;
            }
        }
        if (bestNode < 0) {
            return new PlacementDecision.Infeasible("no node has " + req.gpus() + " idle GPU(s) with "
                    + req.memoryMib() + " MiB" + HostFit.asked(req));
        }
        List<Slot> slots = new ArrayList<>(req.gpus());
        for (int g = state.firstGpu(bestNode); g < state.endGpu(bestNode) && slots.size() < req.gpus(); g++) {
            if (!state.isActive(g) && state.gpu(g).memoryMib() >= req.memoryMib() && req.runsOn(state.gpu(g))) {
                slots.add(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib()));
            }
        }
        return new PlacementDecision.Placed(state.nodeName(bestNode), slots);
    }
}
