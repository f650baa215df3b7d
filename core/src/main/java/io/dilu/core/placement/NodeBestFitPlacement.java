package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.List;

/**
 * The best-fit baseline of Weng et al.'s FGD evaluation (USENIX ATC'23), as their simulator scores it
 * ({@code pkg/simulator/plugin/best_fit_score.go}): the node left with the least free resources after placing the
 * request, by {@code ½ (free CPU − asked CPU) / 128 cores + ½ (free GPU share − asked GPU share) / 8 GPUs}, lowest
 * wins; then, on that node, the tightest GPU for a GPU-sharing request and the first idle GPUs for whole GPUs
 * ({@code allocateGpuIdBasedOnBestFit} in {@code open_gpu_share.go}). A CPU-only request is scored the same way.
 * A node qualifies when it has the GPUs (share, memory, model) and the CPU and memory the request asks for.
 *
 * <p>The score is exact, ties to the lower node ({@link FragmentationGradientPlacement.Scoring#EXACT}), or what
 * the authors' simulator makes of it ({@link FragmentationGradientPlacement.Scoring#SIMULATOR}): {@code ⌊100 × (1 −
 * score)⌋}, then normalised over the nodes that qualify to 0..100 in integers ({@code NormalizeScore} in
 * {@code plugin_utils.go}), highest wins, the first node among equals (see {@link FragmentationGradientPlacement}).
 * A node whose CPU is not modelled scores on its GPUs alone.
 */
public final class NodeBestFitPlacement implements PlacementPolicy {

    private final FragmentationGradientPlacement.Scoring scoring;

    public NodeBestFitPlacement() {
        this(FragmentationGradientPlacement.Scoring.EXACT);
    }

    public NodeBestFitPlacement(FragmentationGradientPlacement.Scoring scoring) {
        this.scoring = scoring;
    }

    /** The largest node the authors normalise by: 128 cores and 8 GPUs ({@code MaxSpecCpu}, {@code MaxSpecGpu}). */
    static final double MAX_CPU_MILLI = 128_000;
    static final double MAX_GPU_MILLI = 8_000;

    @Override
    public String name() {
        return scoring == FragmentationGradientPlacement.Scoring.EXACT ? "bestfit-node" : "bestfit-node-simulator";
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        int bestNode = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        long[] integer = scoring == FragmentationGradientPlacement.Scoring.EXACT ? null : new long[state.nodeCount()];
        boolean[] qualifies = new boolean[state.nodeCount()];
        long lowest = Long.MAX_VALUE;
        long highest = Long.MIN_VALUE;
        for (int n = 0; n < state.nodeCount(); n++) {
            if (state.endGpu(n) - state.firstGpu(n) < req.gpus() || !state.hostFits(n, req)
                    || (req.gpus() > 0 && pick(state, n, req) == null)) {
                continue;
            }
            qualifies[n] = true;
            double score = score(state, n, req);
            if (integer != null) {
                integer[n] = (long) ((1.0 - score) * 100);
                lowest = Math.min(lowest, integer[n]);
                highest = Math.max(highest, integer[n]);
            } else if (score < bestScore) {
                bestScore = score;
                bestNode = n;
            }
        }
        if (integer != null && highest >= lowest) {
            long best = -1;
            for (int n = 0; n < integer.length; n++) {
                if (!qualifies[n]) {
                    continue;
                }
                long normalised = highest == lowest ? 0 : (integer[n] - lowest) * 100 / (highest - lowest);
                if (normalised > best) {
                    best = normalised;
                    bestNode = n;
                }
            }
        }
        if (bestNode < 0) {
            return new PlacementDecision.Infeasible(req.cpuOnly()
                    ? "no node has " + req.cpuMilli() + " milli-CPU and " + req.hostMemoryMib() + " MiB of memory free"
                    : "no node has " + req.gpus() + " GPU(s) with " + req.memoryMib() + " MiB free" + HostFit.asked(req)
                            + " and room for SM request " + ComplementaryPlacement.percent(req.requestMilli()));
        }
        List<Slot> slots = new ArrayList<>();
        if (req.gpus() > 0) {
            for (int g : pick(state, bestNode, req)) {
                slots.add(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib()));
            }
        }
        return new PlacementDecision.Placed(state.nodeName(bestNode), slots);
    }

    private static double score(ClusterState state, int n, InstanceRequest req) {
        long gpuLeft = 0;
        for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
            gpuLeft += Math.max(0, 1000 - state.requestSum(g));
        }
        double gpu = 0.5 * (gpuLeft - (long) req.requestMilli() * req.gpus()) / MAX_GPU_MILLI;
        return state.cpuCapacity(n) == NodeInventory.UNLIMITED ? gpu
                : gpu + 0.5 * (state.cpuFree(n) - req.cpuMilli()) / MAX_CPU_MILLI;
    }

    /** The GPUs of node {@code n} the request would take, or null when too few fit. */
    private static int[] pick(ClusterState state, int n, InstanceRequest req) {
        int[] chosen = new int[req.gpus()];
        boolean whole = req.requestMilli() == 1000;
        for (int k = 0; k < req.gpus(); k++) {
            int pick = -1;
            int pickFree = Integer.MAX_VALUE;
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                int free = 1000 - state.requestSum(g);
                if (contains(chosen, k, g) || free < req.requestMilli() || !req.runsOn(state.gpu(g))
                        || state.freeMemory(g) < req.memoryMib()) {
                    continue;
                }
                // whole GPUs: the first idle ones; a share: the tightest GPU, the first of equals
                if (whole ? pick < 0 : free < pickFree) {
                    pick = g;
                    pickFree = free;
                }
            }
            if (pick < 0) {
                return null;
            }
            chosen[k] = pick;
        }
        return chosen;
    }

    private static boolean contains(int[] values, int count, int value) {
        for (int i = 0; i < count; i++) {
            if (values[i] == value) {
                return true;
            }
        }
        return false;
    }
}
