package io.dilu.core.placement;

import java.util.List;

/**
 * Where a request that asks for no GPU goes (a CPU-only pod of the openb trace), for the policies whose papers
 * say nothing about it: a node already in use before an empty one (consolidation, as Algorithm 1 opens a new GPU
 * only when no active one fits), and among those the best fit by Algorithm 1's score with the node's CPU in place
 * of SM and its memory in place of GPU memory, {@code α(1 − Σcpu/CPU) + β(1 − Σmem/MEM)}, lowest wins; ties to
 * the lower node. A dimension a node does not model ({@link NodeInventory#UNLIMITED}) counts as empty.
 */
final class HostFit {

    private HostFit() {}

    static PlacementDecision decide(ClusterState state, InstanceRequest req, boolean[] allowed, double alpha,
            double beta) {
        int n = bestNode(state, req, allowed, alpha, beta);
        return n < 0
                ? new PlacementDecision.Infeasible("no node has " + req.cpuMilli() + " milli-CPU and " + req.hostMemoryMib()
                        + " MiB of memory free")
                : new PlacementDecision.Placed(state.nodeName(n), List.of());
    }

    /** The node for {@code req}, or -1 when none has its CPU and memory free. */
    static int bestNode(ClusterState state, InstanceRequest req, boolean[] allowed, double alpha, double beta) {
        int best = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        ClusterState.OrdinalSet used = state.usedNodes();
        for (int i = 0; i < used.size(); i++) {
            int n = used.get(i);
            if ((allowed == null || allowed[n]) && state.hostFits(n, req)) {
                double s = score(state, n, req, alpha, beta);
                if (s < bestScore || (s == bestScore && n < best)) {
                    best = n;
                    bestScore = s;
                }
            }
        }
        if (best >= 0) {
            return best;
        }
        for (int n : state.emptyNodeRepresentatives(allowed)) {
            if (state.hostFits(n, req)) {
                double s = score(state, n, req, alpha, beta);
                if (s < bestScore || (s == bestScore && n < best)) {
                    best = n;
                    bestScore = s;
                }
            }
        }
        return best;
    }

    private static double score(ClusterState state, int n, InstanceRequest req, double alpha, double beta) {
        return alpha * (1 - share(state.cpuUsed(n) + req.cpuMilli(), state.cpuCapacity(n)))
                + beta * (1 - share(state.hostMemoryUsed(n) + req.hostMemoryMib(), state.hostMemoryCapacity(n)));
    }

    private static double share(long used, long capacity) {
        return capacity == NodeInventory.UNLIMITED || capacity == 0 ? 0 : (double) used / capacity;
    }

    /** ", N milli-CPU and M MiB of memory" when {@code req} asks for them, for the reasons policies give. */
    static String asked(InstanceRequest req) {
        return req.cpuMilli() == 0 && req.hostMemoryMib() == 0 ? ""
                : " (on a node with " + req.cpuMilli() + " milli-CPU and " + req.hostMemoryMib() + " MiB of memory free)";
    }
}
