package io.dilu.simulator.bench;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.placement.Slot;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeSet;

/**
 * Algorithm 1 as it was before commit 72b749d ("workload affinity as the paper means it"): a faithful copy of
 * {@code ComplementaryPlacement}'s search and of the {@code ClusterState} it read at 000850e, kept here only so
 * that {@code ./dilu bench placement} can time today's search against it in the same run (docs/benchmarks.md,
 * "placement"). Its affinity tier is the GPUs already hosting the function; then every active GPU; then a new one.
 * Nothing but the bench uses it. The copy differs from the original in names only (the state is a nested class,
 * the entry point {@link #place}, the parameters fixed at their defaults); the search and the state's bookkeeping
 * are line for line the same.
 */
public final class PreAffinityPlacement {

    private PreAffinityPlacement() {}

    /** GPUs occupied and instances refused once {@code requests} are placed in order on a fresh cluster. */
    public record Result(int gpus, int infeasible) {}

    public static Result place(List<NodeInventory> nodes, List<InstanceRequest> requests) {
        PreAffinityPlacement search = new PreAffinityPlacement();
        State state = new State(nodes);
        int infeasible = 0;
        for (InstanceRequest r : requests) {
            if (search.decide(state, r, null) instanceof PlacementDecision.Placed p) {
                state.apply(r.id(), r.function(), p);
            } else {
                infeasible++;
            }
        }
        return new Result(state.activeGpuCount(), infeasible);
    }

    private static final int AFFINITY = 0;
    private static final int ACTIVE = 1;
    private static final int IDLE = 2;

    private final PlacementParameters params = PlacementParameters.DEFAULTS;

    private PlacementDecision decide(State state, InstanceRequest req, boolean[] allowed) {
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
        return new PlacementDecision.Infeasible("no node has " + (req.gpus() > 1 ? req.gpus() + " GPUs" : "a GPU")
                + " with " + req.memoryMib() + " MiB free and room for SM request " + percent(req.requestMilli())
                + " / limit " + percent(req.limitMilli()) + " under Ω = " + percent(params.omegaMilli())
                + ", γ = " + percent(params.gammaMilli()));
    }

    private PlacementDecision.Placed onOneGpu(State state, InstanceRequest req, boolean largerThanAnyGpu,
            boolean[] allowed) {
        if (!largerThanAnyGpu) {
            int g = bestAmong(state, state.gpusHosting(req.function()), req, allowed);
            if (g < 0) {
                g = bestActive(state, req, allowed);
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

    // ---- single GPU, Algorithm 1 lines 11-16 ----

    /** The lowest-scoring feasible GPU seen so far; ties go to the lower ordinal so decisions are repeatable. */
    private final class Best {
        private final State state;
        private final InstanceRequest req;
        private final boolean[] allowed;
        int gpu = -1;
        double score = Double.POSITIVE_INFINITY;

        Best(State state, InstanceRequest req, boolean[] allowed) {
            this.state = state;
            this.req = req;
            this.allowed = allowed;
        }

        void consider(int g) {
            if ((allowed == null || allowed[state.nodeOf(g)]) && fits(state, g, req.requestMilli(), req.limitMilli(), req.memoryMib())) {
                double s = score(state, g, req.requestMilli(), req.memoryMib());
                if (s < score || (s == score && g < gpu)) {
                    score = s;
                    gpu = g;
                }
            }
        }
    }

    private int bestAmong(State state, Map<Integer, Integer> candidates, InstanceRequest req, boolean[] allowed) {
        Best best = new Best(state, req, allowed);
        candidates.keySet().forEach(best::consider);
        return best.gpu;
    }

    private int bestActive(State state, InstanceRequest req, boolean[] allowed) {
        Best best = new Best(state, req, allowed);
        State.OrdinalSet active = state.activeGpus();
        for (int i = 0; i < active.size(); i++) {
            best.consider(active.get(i));
        }
        return best.gpu;
    }

    private int bestNewGpu(State state, InstanceRequest req, boolean[] allowed) {
        Best best = new Best(state, req, allowed);
        State.OrdinalSet partial = state.partialNodes();
        for (int i = 0; i < partial.size(); i++) {
            int n = partial.get(i);
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if (!state.isActive(g)) {
                    best.consider(g);
                }
            }
        }
        if (best.gpu >= 0) {
            return best.gpu;
        }
        for (int n : state.emptyNodeRepresentatives(allowed)) {
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                best.consider(g);
            }
        }
        return best.gpu;
    }

    // ---- several GPUs of one node ----

    private PlacementDecision.Placed onOneNode(State state, InstanceRequest req, boolean[] allowed) {
        Map<Integer, Integer> affinity = state.gpusHosting(req.function());
        int[] chosen = new int[req.gpus()];
        int[] bestChoice = null;
        long bestCost = Long.MAX_VALUE;
        double bestScore = Double.POSITIVE_INFINITY;
        int bestNode = -1;
        List<Integer> nodes = candidateNodes(state, true, allowed);
        for (int n : nodes) {
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
                    if (contains(chosen, found, g)
                            || !fits(state, g, req.requestMilli(), req.limitMilli(), req.memoryMib())) {
                        continue;
                    }
                    int tier = !state.isActive(g) ? IDLE : affinity.containsKey(g) ? AFFINITY : ACTIVE;
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

    private PlacementDecision.Placed split(State state, InstanceRequest req, boolean includeIdle, boolean[] allowed) {
        List<Slot> best = null;
        int bestNode = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int n : candidateNodes(state, includeIdle, allowed)) {
            List<Integer> gpus = new ArrayList<>();
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if ((includeIdle || state.isActive(g)) && state.freeMemory(g) >= params.minStageMemoryMib()) {
                    gpus.add(g);
                }
            }
            gpus.sort((a, b) -> Long.compare(state.freeMemory(b), state.freeMemory(a)));
            List<Slot> stages = new ArrayList<>();
            long remaining = req.memoryMib();
            double scores = 0;
            for (int g : gpus) {
                if (remaining == 0 || stages.size() == params.maxPipelineStages()) {
                    break;
                }
                long memory = Math.min(state.freeMemory(g), remaining);
                int request = proportional(req.requestMilli(), memory, req.memoryMib());
                int limit = Math.max(request, proportional(req.limitMilli(), memory, req.memoryMib()));
                if (fits(state, g, request, limit, memory)) {
                    stages.add(new Slot(state.gpu(g).uuid(), request, limit, memory));
                    scores += score(state, g, request, memory);
                    remaining -= memory;
                }
            }
            if (remaining > 0 || stages.size() < 2) {
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

    private static int proportional(int share, long part, long whole) {
        return (int) Math.max(1, Math.ceilDiv(share * part, whole));
    }

    private static List<Integer> candidateNodes(State state, boolean includeEmpty, boolean[] allowed) {
        State.OrdinalSet used = state.usedNodes();
        List<Integer> nodes = new ArrayList<>(used.size() + 4);
        for (int i = 0; i < used.size(); i++) {
            if (allowed == null || allowed[used.get(i)]) {
                nodes.add(used.get(i));
            }
        }
        if (includeEmpty) {
            nodes.addAll(state.emptyNodeRepresentatives(allowed));
        }
        return nodes;
    }

    // ---- Algorithm 1 lines 22-26 ----

    private boolean fits(State state, int g, int request, int limit, long memory) {
        return state.requestSum(g) + request <= params.omegaMilli()
                && state.limitSum(g) + limit <= params.gammaMilli()
                && state.memoryUsed(g) + memory <= state.gpu(g).memoryMib();
    }

    private double score(State state, int g, int request, long memory) {
        return params.alpha() * (1 - (state.requestSum(g) + request) / 1000.0)
                + params.beta() * (1 - (double) (state.memoryUsed(g) + memory) / state.gpu(g).memoryMib());
    }

    private static PlacementDecision.Placed whole(State state, InstanceRequest req, int g) {
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

    /** The cluster state of 000850e, less what the search does not read (release, public reports). */
    static final class State {

        private final List<NodeInventory> nodes;
        private final GpuDevice[] gpus;
        private final int[] nodeOfGpu;
        private final int[] firstGpuOfNode;
        private final Map<String, Integer> gpuOrdinal = new HashMap<>();
        private final Map<String, Integer> nodeOrdinal = new HashMap<>();

        private final int[] requestSum;
        private final int[] limitSum;
        private final long[] memoryUsed;
        private final int[] instancesOnGpu;
        private final int[] activeGpusOfNode;

        private final OrdinalSet activeGpus;
        private final OrdinalSet usedNodes;
        /** Used nodes that still have an idle GPU: where a new GPU is opened first. */
        private final OrdinalSet partialNodes;
        /** Empty nodes grouped by the shape of their GPUs, so one candidate per shape is enough. */
        private final Map<String, NavigableSet<Integer>> emptyNodesByShape = new LinkedHashMap<>();
        private final String[] shapeOfNode;
        /** function → GPU ordinal → instances of that function on the GPU. */
        private final Map<String, Map<Integer, Integer>> functionGpus = new HashMap<>();
        private final Map<String, Booking> bookings = new HashMap<>();
        private final long largestGpuMemory;
        private final int mostGpusPerNode;

        private record Booking(String function, int[] gpuOrdinals, int[] requests, int[] limits, long[] memory) {}

        State(List<NodeInventory> inventory) {
            this.nodes = List.copyOf(inventory);
            int total = nodes.stream().mapToInt(n -> n.gpus().size()).sum();
            gpus = new GpuDevice[total];
            nodeOfGpu = new int[total];
            firstGpuOfNode = new int[nodes.size() + 1];
            shapeOfNode = new String[nodes.size()];
            int g = 0;
            long largest = 0;
            int most = 0;
            for (int n = 0; n < nodes.size(); n++) {
                NodeInventory node = nodes.get(n);
                if (nodeOrdinal.put(node.name(), n) != null) {
                    throw new IllegalArgumentException("node " + node.name() + " is listed twice");
                }
                firstGpuOfNode[n] = g;
                StringBuilder shape = new StringBuilder();
                for (GpuDevice gpu : node.gpus()) {
                    if (gpuOrdinal.put(gpu.uuid(), g) != null) {
                        throw new IllegalArgumentException("GPU " + gpu.uuid() + " is listed twice");
                    }
                    gpus[g] = gpu;
                    nodeOfGpu[g] = n;
                    largest = Math.max(largest, gpu.memoryMib());
                    shape.append(gpu.memoryMib()).append('/').append(gpu.smCount()).append(',');
                    g++;
                }
                most = Math.max(most, node.gpus().size());
                shapeOfNode[n] = shape.toString();
                if (!node.gpus().isEmpty()) {
                    emptyNodesByShape.computeIfAbsent(shapeOfNode[n], k -> new TreeSet<>()).add(n);
                }
            }
            firstGpuOfNode[nodes.size()] = g;
            largestGpuMemory = largest;
            mostGpusPerNode = most;
            requestSum = new int[total];
            limitSum = new int[total];
            memoryUsed = new long[total];
            instancesOnGpu = new int[total];
            activeGpusOfNode = new int[nodes.size()];
            activeGpus = new OrdinalSet(total);
            usedNodes = new OrdinalSet(nodes.size());
            partialNodes = new OrdinalSet(nodes.size());
        }

        // ---- changes ----

        /**
         * Books a placement decided by a policy. Refuses (and changes nothing) when the instance is already
         * booked, a GPU is unknown, or a GPU's memory would be exceeded: memory is the one hard limit.
         */
        void apply(String instanceId, String function, PlacementDecision.Placed placed) {
            if (bookings.containsKey(instanceId)) {
                throw new IllegalStateException("instance " + instanceId + " is already placed");
            }
            int size = placed.slots().size();
            int[] ordinals = new int[size];
            int[] requests = new int[size];
            int[] limits = new int[size];
            long[] memory = new long[size];
            for (int i = 0; i < size; i++) {
                Slot slot = placed.slots().get(i);
                Integer ordinal = gpuOrdinal.get(slot.gpuUuid());
                if (ordinal == null) {
                    throw new IllegalArgumentException("unknown GPU " + slot.gpuUuid());
                }
                if (memoryUsed[ordinal] + slot.memoryMib() > gpus[ordinal].memoryMib()) {
                    throw new IllegalStateException("GPU " + slot.gpuUuid() + " has " + freeMemory(ordinal)
                            + " MiB free, " + slot.memoryMib() + " MiB asked");
                }
                ordinals[i] = ordinal;
                requests[i] = slot.requestMilli();
                limits[i] = slot.limitMilli();
                memory[i] = slot.memoryMib();
            }
            for (int i = 0; i < size; i++) {
                add(ordinals[i], function, requests[i], limits[i], memory[i], +1);
            }
            bookings.put(instanceId, new Booking(function, ordinals, requests, limits, memory));
        }

        private void add(int g, String function, int request, int limit, long memory, int count) {
            boolean wasActive = instancesOnGpu[g] > 0;
            requestSum[g] += request;
            limitSum[g] += limit;
            memoryUsed[g] += memory;
            instancesOnGpu[g] += count;
            Map<Integer, Integer> hosted = functionGpus.computeIfAbsent(function, f -> new HashMap<>());
            int left = hosted.merge(g, count, Integer::sum);
            if (left <= 0) {
                hosted.remove(g);
                if (hosted.isEmpty()) {
                    functionGpus.remove(function);
                }
            }
            boolean isActive = instancesOnGpu[g] > 0;
            if (wasActive != isActive) {
                int n = nodeOfGpu[g];
                if (isActive) {
                    activeGpus.add(g);
                    if (activeGpusOfNode[n]++ == 0) {
                        usedNodes.add(n);
                        emptyNodesByShape.get(shapeOfNode[n]).remove(n);
                    }
                } else {
                    activeGpus.remove(g);
                    if (--activeGpusOfNode[n] == 0) {
                        usedNodes.remove(n);
                        emptyNodesByShape.get(shapeOfNode[n]).add(n);
                    }
                }
                int size = firstGpuOfNode[n + 1] - firstGpuOfNode[n];
                if (activeGpusOfNode[n] > 0 && activeGpusOfNode[n] < size) {
                    partialNodes.add(n);
                } else {
                    partialNodes.remove(n);
                }
            }
        }

        // ---- reads, by ordinal (for policies) ----

        int gpuCount() {
            return gpus.length;
        }

        int nodeCount() {
            return nodes.size();
        }

        GpuDevice gpu(int g) {
            return gpus[g];
        }

        int nodeOf(int g) {
            return nodeOfGpu[g];
        }

        String nodeName(int n) {
            return nodes.get(n).name();
        }

        int firstGpu(int n) {
            return firstGpuOfNode[n];
        }

        int endGpu(int n) {
            return firstGpuOfNode[n + 1];
        }

        int requestSum(int g) {
            return requestSum[g];
        }

        int limitSum(int g) {
            return limitSum[g];
        }

        long memoryUsed(int g) {
            return memoryUsed[g];
        }

        long freeMemory(int g) {
            return gpus[g].memoryMib() - memoryUsed[g];
        }

        boolean isActive(int g) {
            return instancesOnGpu[g] > 0;
        }

        OrdinalSet activeGpus() {
            return activeGpus;
        }

        OrdinalSet usedNodes() {
            return usedNodes;
        }

        OrdinalSet partialNodes() {
            return partialNodes;
        }

        /** The lowest-numbered empty node of each GPU shape, among the allowed nodes (all when null). */
        List<Integer> emptyNodeRepresentatives(boolean[] allowed) {
            List<Integer> result = new ArrayList<>(emptyNodesByShape.size());
            for (NavigableSet<Integer> set : emptyNodesByShape.values()) {
                for (int n : set) {
                    if (allowed == null || allowed[n]) {
                        result.add(n);
                        break;
                    }
                }
            }
            return result;
        }

        /** GPU ordinal → instances of {@code function} on it; empty when the function runs nowhere. */
        Map<Integer, Integer> gpusHosting(String function) {
            return functionGpus.getOrDefault(function, Map.of());
        }

        long largestGpuMemoryMib() {
            return largestGpuMemory;
        }

        int mostGpusPerNode() {
            return mostGpusPerNode;
        }

        int activeGpuCount() {
            return activeGpus.size();
        }

        /** A set of small non-negative ints with O(1) add, remove and indexed iteration. */
        static final class OrdinalSet {
            private final int[] members;
            private final int[] position;
            private int size;

            OrdinalSet(int capacity) {
                members = new int[capacity];
                position = new int[capacity];
                java.util.Arrays.fill(position, -1);
            }

            void add(int x) {
                if (position[x] < 0) {
                    position[x] = size;
                    members[size++] = x;
                }
            }

            void remove(int x) {
                int p = position[x];
                if (p >= 0) {
                    int last = members[--size];
                    members[p] = last;
                    position[last] = p;
                    position[x] = -1;
                }
            }

            int size() {
                return size;
            }

            int get(int i) {
                return members[i];
            }
        }
    }
}
