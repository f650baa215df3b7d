package io.dilu.core.placement;

import java.util.List;

/**
 * Where a request that asks for no GPU goes (a CPU-only pod of the openb trace), for the policies whose papers
 * say nothing about it. GPUs are what the cluster is short of, so a CPU-only request goes where it takes the least
 * from GPU pods: to the node with the least GPU share still free (nodes without GPUs or with every GPU booked first,
 * empty nodes last), and among those to the best fit by Algorithm 1's score with the node's CPU in place of SM and
 * its memory in place of GPU memory, {@code α(1 − Σcpu/CPU) + β(1 − Σmem/MEM)}, lowest wins; ties to the lower
 * node. A dimension a node does not model ({@link NodeInventory#UNLIMITED}) counts as empty.
 *
 * <p>A first version took Algorithm 1's two rules alone (a node in use before an empty one, then the best fit on
 * CPU and memory): it filled the CPU of nodes whose GPUs were still free, and the GPU share Dilu allocated on the
 * openb lists was 2.1–2.7 points below what it allocates now (docs/benchmarks.md, "openb against FGD").
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
        long bestFree = Long.MAX_VALUE;
        double bestScore = Double.POSITIVE_INFINITY;
        // The used nodes and one empty node per group of interchangeable ones: every node, as far as a choice goes.
        ClusterState.OrdinalSet used = state.usedNodes();
        List<Integer> empty = state.emptyNodeRepresentatives(allowed);
        for (int i = 0; i < used.size() + empty.size(); i++) {
            int n = i < used.size() ? used.get(i) : empty.get(i - used.size());
            if ((allowed != null && !allowed[n]) || !state.hostFits(n, req)) {
                continue;
            }
            long free = 0;
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                free += Math.max(0, 1000 - state.requestSum(g));
            }
            double s = score(state, n, req, alpha, beta);
            if (free < bestFree || (free == bestFree && (s < bestScore || (s == bestScore && n < best)))) {
                best = n;
                bestFree = free;
                bestScore = s;
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
