package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.List;

/**
 * The plain best-fit baseline on SM request: the feasible GPU that is left with the least free SM after
 * placing the instance, among all GPUs — no workload affinity, no limits (γ), no memory in the score (memory
 * must still fit). A multi-GPU instance takes, on one node, the GPUs that leave that node the least free SM.
 * Ties go to the lower GPU ordinal. The node must have the CPU and memory the request asks for; a CPU-only
 * request goes where {@link HostFit} puts it.
 */
public final class BestFitPlacement implements PlacementPolicy {

    @Override
    public String name() {
        return "bestfit";
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        if (req.cpuOnly()) {
            return HostFit.decide(state, req, null, PlacementParameters.DEFAULTS.alpha(), PlacementParameters.DEFAULTS.beta());
        }
        if (req.gpus() == 1) {
            int best = -1;
            int bestLeft = Integer.MAX_VALUE;
            for (int g = 0; g < state.gpuCount(); g++) {
                int left = left(state, g, req);
                if (left >= 0 && left < bestLeft) {
                    best = g;
                    bestLeft = left;
                }
            }
            return best < 0 ? infeasible(req) : new PlacementDecision.Placed(state.nodeName(state.nodeOf(best)),
                    List.of(slot(state, best, req)));
        }
        List<Slot> bestSlots = null;
        long bestLeft = Long.MAX_VALUE;
        int bestNode = -1;
        for (int n = 0; n < state.nodeCount(); n++) {
            if (state.endGpu(n) - state.firstGpu(n) < req.gpus() || !state.hostFits(n, req)) {
                continue;
            }
            List<Integer> fitting = new ArrayList<>();
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if (left(state, g, req) >= 0) {
                    fitting.add(g);
                }
            }
            if (fitting.size() < req.gpus()) {
                continue;
            }
            fitting.sort((a, b) -> Integer.compare(left(state, a, req), left(state, b, req)));
            List<Integer> chosen = fitting.subList(0, req.gpus());
            long total = chosen.stream().mapToLong(g -> left(state, g, req)).sum();
            if (total < bestLeft) {
                bestLeft = total;
                bestNode = n;
                bestSlots = chosen.stream().map(g -> slot(state, g, req)).toList();
            }
        }
        return bestSlots == null ? infeasible(req) : new PlacementDecision.Placed(state.nodeName(bestNode), bestSlots);
    }

    /** Free SM request the GPU would keep, or -1 when the instance does not fit on it. */
    private static int left(ClusterState state, int g, InstanceRequest req) {
        int left = 1000 - state.requestSum(g) - req.requestMilli();
        return left >= 0 && state.memoryUsed(g) + req.memoryMib() <= state.gpu(g).memoryMib() && req.runsOn(state.gpu(g))
                && state.hostFits(state.nodeOf(g), req) ? left : -1;
    }

    private static Slot slot(ClusterState state, int g, InstanceRequest req) {
        return new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib());
    }

    private static PlacementDecision.Infeasible infeasible(InstanceRequest req) {
        return new PlacementDecision.Infeasible("no node has " + req.gpus() + " GPU(s) with " + req.memoryMib()
                + " MiB free" + HostFit.asked(req) + " and room for SM request " + ComplementaryPlacement.percent(req.requestMilli()));
    }
}
