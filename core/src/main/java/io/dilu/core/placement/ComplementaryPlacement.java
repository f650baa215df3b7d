package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Dilu's resourcing-complementary placement (the paper's Algorithm 1).
 *
 * <p>For an instance on one GPU, the GPUs are tried in tiers, and within a tier the feasible one with the
 * lowest score {@code α(1 − Σreq/SM) + β(1 − Σmem/M)} wins — best fit, so the fullest GPU that still holds
 * it; feasible means Σrequest ≤ Ω, Σlimit ≤ γ and Σmemory ≤ M after adding it, and the limits of the function's own
 * instances on the GPU at most the whole GPU ({@link InstanceRequest#ONE_GPU_MILLI}): γ above 1 bets that neighbours
 * do not peak together, and a function's replicas are scaled out because they do, so beside each other their limits
 * are a promise the GPU cannot keep (docs/architecture.md, "Replicas and γ"):
 * <ol>
 *   <li>workload affinity (§3.3, Principle 1): the other GPUs of the functions its earlier instances sit
 *       beside — a training job's workers each get the same neighbour, so no worker lags (the barrel effect);</li>
 *   <li>the other active GPUs that do not host its function;</li>
 *   <li>active GPUs that host its function already: replicas of one function burst together and would spend
 *       one GPU's γ twice, so they stack only when nothing else active holds them;</li>
 *   <li>a new GPU, preferring idle GPUs of nodes already in use so whole nodes stay free for multi-GPU
 *       instances.</li>
 * </ol>
 *
 * <p>A splittable model (LLM inference) that fits no single fragment is cut into pipeline stages over
 * active GPUs of one node before a new GPU is opened, choosing GPUs by worst fit on free memory so the
 * stages are as few as possible; each stage takes SM request and limit in proportion to the share of the
 * model it holds (largest remainders, so the stages add up to the request exactly, in whole percents when
 * the request is in whole percents: what a device plugin hands out). A model larger than any GPU is split
 * the same way over idle GPUs too.
 *
 * <p>An instance that needs several GPUs (training workers, tensor parallelism) gets them on one node,
 * each chosen in the same order of preference: affinity, active, stacked, new.
 *
 * <p>Where requests ask for the node's CPU and memory (the openb trace), a node must have them free, whatever
 * GPU it offers. A CPU-only request, on which the paper is silent, goes where it takes the least from GPU pods:
 * the node with the least GPU share free, then the best fit by Algorithm 1's score with the node's CPU in place of
 * SM and its memory in place of GPU memory ({@link HostFit}).
 */
public final class ComplementaryPlacement implements PlacementPolicy {

    private static final int AFFINITY = 0;
    private static final int ACTIVE = 1;
    private static final int STACKED = 2;
    private static final int IDLE = 3;

    private final PlacementParameters params;
    private final FragmentationOutlook outlook;

    public ComplementaryPlacement() {
        this(PlacementParameters.DEFAULTS);
    }

    public ComplementaryPlacement(PlacementParameters params) {
        this.params = params;
        this.outlook = new FragmentationOutlook(params.omegaMilli());
    }

    @Override
    public String name() {
        return "dilu";
    }

    public PlacementParameters parameters() {
        return params;
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        return decide(state, req, (boolean[]) null);
    }

    /**
     * The same decision among the GPUs of {@code nodes} only: what a scheduler extender needs, whose candidate
     * nodes have passed the scheduler's own filters. Unknown node names are ignored.
     */
    public PlacementDecision decide(ClusterState state, InstanceRequest req, Collection<String> nodes) {
        return decide(state, req, state.nodeMask(nodes));
    }

    private PlacementDecision decide(ClusterState state, InstanceRequest req, boolean[] allowed) {
        if (req.cpuOnly()) {
            return HostFit.decide(state, req, allowed, params.alpha(), params.beta());
        }
        if (req.requestMilli() > params.omegaMilli()) {
            return new PlacementDecision.Infeasible("SM request " + percent(req.requestMilli())
                    + " exceeds what one GPU may promise (Ω = " + percent(params.omegaMilli()) + ")");
        }
        if (req.limitMilli() > params.gammaMilli()) {
            return new PlacementDecision.Infeasible("SM limit " + percent(req.limitMilli())
                    + " exceeds what one GPU may oversubscribe (γ = " + percent(params.gammaMilli()) + ")");
        }
        if (req.gpus() > state.mostGpusPerNode()) {
            return new PlacementDecision.Infeasible("needs " + req.gpus() + " GPUs on one node; no node has more than "
                    + state.mostGpusPerNode());
        }
        boolean largerThanAnyGpu = req.memoryMib() > state.largestGpuMemoryMib();
        if (largerThanAnyGpu && (!req.splittable() || req.gpus() > 1)) {
            return new PlacementDecision.Infeasible("needs " + req.memoryMib() + " MiB of GPU memory per GPU; the largest GPU has "
                    + state.largestGpuMemoryMib() + " MiB and the model may not be split into pipeline stages");
        }
        PlacementDecision.Placed placed = req.gpus() > 1
                ? onOneNode(state, req, allowed)
                : onOneGpu(state, req, largerThanAnyGpu, allowed);
        if (placed != null) {
            return placed;
        }
        String models = req.gpuModels().isEmpty() ? "" : " of model " + String.join("|", new java.util.TreeSet<>(req.gpuModels()));
        return new PlacementDecision.Infeasible("no node has " + (req.gpus() > 1 ? req.gpus() + " GPUs" : "a GPU") + models
                + " with " + req.memoryMib() + " MiB free" + HostFit.asked(req) + " and room for SM request " + percent(req.requestMilli())
                + " / limit " + percent(req.limitMilli()) + " under Ω = " + percent(params.omegaMilli())
                + ", γ = " + percent(params.gammaMilli())
                + (req.splittable() && req.gpus() == 1 ? ", nor enough fragments of one node's GPUs for pipeline stages (at most "
                        + params.maxPipelineStages() + " of at least " + params.minStageMemoryMib() + " MiB)" : ""));
    }

    private PlacementDecision.Placed onOneGpu(ClusterState state, InstanceRequest req, boolean largerThanAnyGpu,
            boolean[] allowed) {
        if (!largerThanAnyGpu) {
            ClusterState.AffinityMarks marks = state.affinity(req.function());
            int g = bestBesidePartners(state, req, marks, allowed);
            if (g < 0) {
                g = bestActiveThenStacked(state, req, marks, allowed);
            }
            if (g < 0 && req.splittable()) {
                PlacementDecision.Placed split = split(state, req, false, allowed);
                if (split != null) {
                    return split;
                }
            }
            if (g < 0) {
                g = bestNewGpu(state, req, allowed);
            }
            if (g >= 0) {
                return whole(state, req, g);
            }
            return null;
        }
        return split(state, req, true, allowed);
    }

    // ---- single GPU, Algorithm 1 lines 11-16, with replicas of one function stacked last ----

    /**
     * The feasible GPU seen so far that strands the least GPU share, then has the lowest score; ties go to the
     * lower ordinal so decisions are repeatable.
     */
    private final class Best {
        private final ClusterState state;
        private final InstanceRequest req;
        private final boolean[] allowed;
        private final int function;
        int gpu = -1;
        int stranded = Integer.MAX_VALUE;
        double score = Double.POSITIVE_INFINITY;

        Best(ClusterState state, InstanceRequest req, boolean[] allowed) {
            this.state = state;
            this.req = req;
            this.allowed = allowed;
            this.function = state.knownFunctionId(req.function());
        }

        void consider(int g) {
            if ((allowed == null || allowed[state.nodeOf(g)]) && req.runsOn(state.gpu(g))
                    && fits(state, g, function, req.requestMilli(), req.limitMilli(), req.memoryMib())
                    && state.hostFits(state.nodeOf(g), req)) {
                double s = score(state, g, req.requestMilli(), req.memoryMib());
                if (params.fragmentation() > 0) {
                    s += params.fragmentation() * outlook.delta(state, g, req.requestMilli());
                }
                int lost = stranded(state, g, req);
                if (lost < stranded || (lost == stranded && (s < score || (s == score && g < gpu)))) {
                    stranded = lost;
                    score = s;
                    gpu = g;
                }
            }
        }
    }

    /** The best GPU of the function's partners that does not host the function itself (G_WA). */
    private int bestBesidePartners(ClusterState state, InstanceRequest req, ClusterState.AffinityMarks marks,
            boolean[] allowed) {
        Best best = new Best(state, req, allowed);
        for (int i = 0; i < marks.besideCount(); i++) {
            best.consider(marks.besideGpu(i));
        }
        return best.gpu;
    }

    /**
     * The best active GPU that hosts no instance of the function; else the best that does (replicas stacked). One
     * pass over the active GPUs fills both tiers: which tier a GPU is in is an array read.
     */
    private int bestActiveThenStacked(ClusterState state, InstanceRequest req, ClusterState.AffinityMarks marks,
            boolean[] allowed) {
        Best active = new Best(state, req, allowed);
        Best stacked = new Best(state, req, allowed);
        ClusterState.OrdinalSet gpus = state.activeGpus();
        for (int i = 0; i < gpus.size(); i++) {
            int g = gpus.get(i);
            (marks.own(g) ? stacked : active).consider(g);
        }
        return active.gpu >= 0 ? active.gpu : stacked.gpu;
    }

    /**
     * An idle GPU of a node in use, so whole nodes stay free for multi-GPU instances; one of an empty node when
     * none is feasible, or when every one would strand its node's other GPUs and an empty node's would not.
     */
    private int bestNewGpu(ClusterState state, InstanceRequest req, boolean[] allowed) {
        Best partialBest = new Best(state, req, allowed);
        ClusterState.OrdinalSet partial = state.partialNodes();
        for (int i = 0; i < partial.size(); i++) {
            int n = partial.get(i);
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if (!state.isActive(g)) {
                    partialBest.consider(g);
                }
            }
        }
        if (partialBest.gpu >= 0 && partialBest.stranded == 0) {
            return partialBest.gpu;
        }
        Best emptyBest = new Best(state, req, allowed);
        for (int n : state.emptyNodeRepresentatives(allowed)) {
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                emptyBest.consider(g);
            }
        }
        return emptyBest.gpu >= 0 && (partialBest.gpu < 0 || emptyBest.stranded < partialBest.stranded)
                ? emptyBest.gpu : partialBest.gpu;
    }

    // ---- several GPUs of one node ----

    private PlacementDecision.Placed onOneNode(ClusterState state, InstanceRequest req, boolean[] allowed) {
        ClusterState.AffinityMarks marks = state.affinity(req.function());
        int[] chosen = new int[req.gpus()];
        int function = state.knownFunctionId(req.function());
        int[] bestChoice = null;
        long bestCost = Long.MAX_VALUE;
        double bestScore = Double.POSITIVE_INFINITY;
        int bestNode = -1;
        int[] nodes = candidateNodes(state, true, allowed);
        for (int n : nodes) {
            if (!state.hostFits(n, req)) {
                continue;
            }
            int found = 0;
            int idle = 0;
            int tiers = 0;
            double scores = 0;
            // Pick the n GPUs of this node that Algorithm 1 would pick one after another.
            for (int k = 0; k < req.gpus(); k++) {
                int pick = -1;
                int pickTier = Integer.MAX_VALUE;
                double pickScore = Double.POSITIVE_INFINITY;
                for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                    if (contains(chosen, found, g) || !req.runsOn(state.gpu(g))
                            || !fits(state, g, function, req.requestMilli(), req.limitMilli(), req.memoryMib())) {
                        continue;
                    }
                    int tier = !state.isActive(g) ? IDLE : marks.own(g) ? STACKED : marks.beside(g) ? AFFINITY : ACTIVE;
                    double s = score(state, g, req.requestMilli(), req.memoryMib());
                    if (tier < pickTier || (tier == pickTier && s < pickScore)) {
                        pick = g;
                        pickTier = tier;
                        pickScore = s;
                    }
                }
                if (pick < 0) {
                    break;
                }
                chosen[found++] = pick;
                idle += pickTier == IDLE ? 1 : 0;
                tiers += pickTier;
                scores += pickScore;
            }
            if (found < req.gpus()) {
                continue;
            }
            long cost = (long) idle * 1000 + tiers;
            if (cost < bestCost || (cost == bestCost && scores < bestScore)) {
                bestCost = cost;
                bestScore = scores;
                bestChoice = chosen.clone();
                bestNode = n;
            }
        }
        if (bestChoice == null) {
            return null;
        }
        List<Slot> slots = new ArrayList<>(bestChoice.length);
        for (int g : bestChoice) {
            slots.add(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib()));
        }
        return new PlacementDecision.Placed(state.nodeName(bestNode), slots);
    }

    // ---- pipeline stages over fragments, worst fit on free memory ----

    private PlacementDecision.Placed split(ClusterState state, InstanceRequest req, boolean includeIdle, boolean[] allowed) {
        List<Slot> best = null;
        int bestNode = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        int[] gpus = new int[state.mostGpusPerNode()];
        int function = state.knownFunctionId(req.function());
        for (int n : candidateNodes(state, includeIdle, allowed)) {
            if (!state.hostFits(n, req)) {
                continue;
            }
            // The node's candidate GPUs by free memory, most first (a stable insertion sort: a node has few GPUs).
            int count = 0;
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if ((includeIdle || state.isActive(g)) && req.runsOn(state.gpu(g))
                        && state.freeMemory(g) >= params.minStageMemoryMib()) {
                    int j = count++;
                    while (j > 0 && state.freeMemory(gpus[j - 1]) < state.freeMemory(g)) {
                        gpus[j] = gpus[j - 1];
                        j--;
                    }
                    gpus[j] = g;
                }
            }
            List<Slot> stages = null;
            long remaining = req.memoryMib();
            double scores = 0;
            for (int i = 0; i < count; i++) {
                int g = gpus[i];
                if (remaining == 0 || (stages != null && stages.size() == params.maxPipelineStages())) {
                    break;
                }
                long memory = Math.min(state.freeMemory(g), remaining);
                int request = proportional(req.requestMilli(), memory, req.memoryMib());
                int limit = Math.max(request, proportional(req.limitMilli(), memory, req.memoryMib()));
                if (fits(state, g, function, request, limit, memory)) {
                    if (stages == null) {
                        stages = new ArrayList<>(params.maxPipelineStages());
                    }
                    stages.add(new Slot(state.gpu(g).uuid(), request, limit, memory));
                    scores += score(state, g, request, memory);
                    remaining -= memory;
                }
            }
            if (remaining > 0 || stages == null || stages.size() < 2) {
                continue;
            }
            stages = exactShares(state, req, stages);
            if (stages == null) {
                continue;
            }
            if (best == null || stages.size() < best.size() || (stages.size() == best.size() && scores < bestScore)) {
                best = stages;
                bestScore = scores;
                bestNode = n;
            }
        }
        return best == null ? null : new PlacementDecision.Placed(state.nodeName(bestNode), best);
    }

    /**
     * The stages' request and limit apportioned to add up to the instance's exactly, in units of 10 (one
     * percent) when both are whole percents; null when a stage would get less than a unit or no longer fits.
     */
    private List<Slot> exactShares(ClusterState state, InstanceRequest req, List<Slot> stages) {
        int unit = req.requestMilli() % 10 == 0 && req.limitMilli() % 10 == 0 ? 10 : 1;
        long[] weights = stages.stream().mapToLong(Slot::memoryMib).toArray();
        int[] requests = Apportion.largestRemainder(req.requestMilli() / unit, weights);
        if (requests == null) {
            return null;
        }
        int[] limits = Apportion.stageLimits(req.limitMilli() / unit, requests, weights);
        List<Slot> exact = new ArrayList<>(stages.size());
        int function = state.knownFunctionId(req.function());
        for (int i = 0; i < stages.size(); i++) {
            Slot s = stages.get(i);
            int request = requests[i] * unit;
            int limit = limits[i] * unit;
            if (!fits(state, state.gpuOrdinal(s.gpuUuid()), function, request, limit, s.memoryMib())) {
                return null;
            }
            exact.add(new Slot(s.gpuUuid(), request, limit, s.memoryMib()));
        }
        return exact;
    }

    private static int proportional(int share, long part, long whole) {
        return (int) Math.max(1, Math.ceilDiv(share * part, whole));
    }

    private static int[] candidateNodes(ClusterState state, boolean includeEmpty, boolean[] allowed) {
        ClusterState.OrdinalSet used = state.usedNodes();
        List<Integer> empty = includeEmpty ? state.emptyNodeRepresentatives(allowed) : List.of();
        int[] nodes = new int[used.size() + empty.size()];
        int count = 0;
        for (int i = 0; i < used.size(); i++) {
            if (allowed == null || allowed[used.get(i)]) {
                nodes[count++] = used.get(i);
            }
        }
        for (int n : empty) {
            nodes[count++] = n;
        }
        return count == nodes.length ? nodes : java.util.Arrays.copyOf(nodes, count);
    }

    /**
     * The SM share (thousandths, under Ω) that placing {@code req} on GPU {@code g} leaves free on g's node but out
     * of reach of another instance like it, because the node's CPU or memory would then be too little for one: the
     * node's free share when so, else 0 (always 0 where the request asks for no host CPU or memory). Replicas of a
     * function come in series, so an instance like this one is the likeliest next request; a GPU pod that takes
     * the last cores of a node whose other GPUs are free strands those GPUs, which SM and GPU memory alone do not
     * show (FGD's fragmentation counts the same case, Weng et al., ATC'23).
     */
    private int stranded(ClusterState state, int g, InstanceRequest req) {
        int n = state.nodeOf(g);
        if (state.cpuFree(n) - req.cpuMilli() >= req.cpuMilli()
                && state.hostMemoryFree(n) - req.hostMemoryMib() >= req.hostMemoryMib()) {
            return 0;
        }
        int free = 0;
        for (int other = state.firstGpu(n); other < state.endGpu(n); other++) {
            int left = params.omegaMilli() - state.requestSum(other) - (other == g ? req.requestMilli() : 0);
            free += Math.max(0, left);
        }
        return free;
    }

    /**
     * Why {@code grown} — what a booking of {@code function} adds in place on its GPU: a parked instance's wake takes its
     * SM request and limit back, its memory being booked already — does not fit there now, or empty when it does:
     * Algorithm 1's constraints (Σ request ≤ Ω, Σ limit ≤ γ, Σ memory ≤ the GPU's) and the function's own limits within
     * one GPU, the same rule as a placement's. The reason names the GPU, the sums with the slot and the bounds.
     */
    public Optional<String> refusal(ClusterState state, String function, Slot grown) {
        int g = state.gpuOrdinal(grown.gpuUuid());
        if (g < 0) {
            return Optional.of("GPU " + grown.gpuUuid() + " is in no node's inventory");
        }
        int f = state.knownFunctionId(function);
        if (fits(state, g, f, grown.requestMilli(), grown.limitMilli(), grown.memoryMib())) {
            return Optional.empty();
        }
        int own = state.functionLimitSum(g, f);
        return Optional.of("GPU " + grown.gpuUuid() + " would hold SM request " + percent(state.requestSum(g) + grown.requestMilli())
                + " (Ω = " + percent(params.omegaMilli()) + "), limit " + percent(state.limitSum(g) + grown.limitMilli())
                + " (γ = " + percent(params.gammaMilli()) + "), " + (state.memoryUsed(g) + grown.memoryMib()) + " of "
                + state.gpu(g).memoryMib() + " MiB"
                + (own > 0 ? ", and SM limit " + percent(own + grown.limitMilli()) + " for " + function
                        + "'s own instances (at most " + percent(InstanceRequest.ONE_GPU_MILLI) + ")" : ""));
    }

    // ---- Algorithm 1 lines 22-26 ----

    /**
     * Whether {@code slot} of {@code function} fits on its GPU as the GPU is booked now, by the placement's feasibility:
     * with it added, Σrequest ≤ Ω, Σlimit ≤ γ, Σmemory ≤ the GPU's memory, and the function's own limits at most the
     * whole GPU. A wake asks it of the GPU its parked instance kept its memory on (after giving that booking back): the
     * same rule a placement is held to, not a second copy of it.
     *
     * @throws IllegalArgumentException for a GPU the state does not know
     */
    public boolean fits(ClusterState state, String function, Slot slot) {
        int g = state.gpuOrdinal(slot.gpuUuid());
        if (g < 0) {
            throw new IllegalArgumentException("unknown GPU " + slot.gpuUuid());
        }
        return fits(state, g, state.knownFunctionId(function), slot.requestMilli(), slot.limitMilli(), slot.memoryMib());
    }

    /**
     * Algorithm 1's feasibility, and the rule for replicas: with {@code limit} added, the limits of function {@code f}'s
     * instances on the GPU are at most the whole GPU (an instance's own limit is at most that: {@link InstanceRequest}).
     */
    private boolean fits(ClusterState state, int g, int f, int request, int limit, long memory) {
        return state.requestSum(g) + request <= params.omegaMilli()
                && state.limitSum(g) + limit <= params.gammaMilli()
                && state.memoryUsed(g) + memory <= state.gpu(g).memoryMib()
                && state.functionLimitSum(g, f) + limit <= InstanceRequest.ONE_GPU_MILLI;
    }

    private double score(ClusterState state, int g, int request, long memory) {
        return params.alpha() * (1 - (state.requestSum(g) + request) / 1000.0)
                + params.beta() * (1 - (double) (state.memoryUsed(g) + memory) / state.gpu(g).memoryMib());
    }

    private static PlacementDecision.Placed whole(ClusterState state, InstanceRequest req, int g) {
        return new PlacementDecision.Placed(state.nodeName(state.nodeOf(g)),
                List.of(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib())));
    }

    private static boolean contains(int[] values, int count, int value) {
        for (int i = 0; i < count; i++) {
            if (values[i] == value) {
                return true;
            }
        }
        return false;
    }

    static String percent(int milli) {
        return (milli % 10 == 0 ? Integer.toString(milli / 10) : Double.toString(milli / 10.0)) + "%";
    }
}
