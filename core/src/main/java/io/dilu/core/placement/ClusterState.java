package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeSet;

/**
 * The GPUs of a cluster and what is booked on each: Σ SM request, Σ SM limit, Σ memory and the functions
 * hosted. Placement policies read it; {@link #apply} and {@link #release} change it.
 *
 * <p>Indexed by dense ordinals with the active GPUs, used nodes and empty nodes kept as sets, so that a
 * decision costs time in the number of <em>active</em> GPUs, not of all GPUs: a 1,000-node simulation
 * places thousands of instances in milliseconds. Not thread-safe; adapters serialise access.
 */
public final class ClusterState {

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
    /** GPU ordinal → function → instances of that function on the GPU (the same counts, read the other way). */
    private final Map<String, Integer>[] gpuFunctions;
    private final Map<String, Booking> bookings = new HashMap<>();
    /** Booked instances by shape: the request mix the cluster serves. */
    private final Map<RequestClass, Integer> requestMix = new HashMap<>();
    private long requestMixVersion;
    private final long largestGpuMemory;
    private final int mostGpusPerNode;

    private record Booking(String function, int[] gpuOrdinals, int[] requests, int[] limits, long[] memory) {}

    public ClusterState(List<NodeInventory> inventory) {
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
        @SuppressWarnings("unchecked")
        Map<String, Integer>[] byGpu = new Map[total];
        gpuFunctions = byGpu;
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
    public void apply(String instanceId, String function, PlacementDecision.Placed placed) {
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
        requestMix.merge(RequestClass.of(requests), 1, Integer::sum);
        requestMixVersion++;
    }

    /** Frees what an instance booked; returns false when it was not placed. */
    public boolean release(String instanceId) {
        Booking booking = bookings.remove(instanceId);
        if (booking == null) {
            return false;
        }
        for (int i = 0; i < booking.gpuOrdinals().length; i++) {
            add(booking.gpuOrdinals()[i], booking.function(), -booking.requests()[i], -booking.limits()[i],
                    -booking.memory()[i], -1);
        }
        if (requestMix.merge(RequestClass.of(booking.requests()), -1, Integer::sum) <= 0) {
            requestMix.remove(RequestClass.of(booking.requests()));
        }
        requestMixVersion++;
        return true;
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
        Map<String, Integer> residents = gpuFunctions[g] == null ? (gpuFunctions[g] = new HashMap<>(4)) : gpuFunctions[g];
        if (residents.merge(function, count, Integer::sum) <= 0) {
            residents.remove(function);
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

    /** The ordinal of the GPU with {@code uuid}; -1 when no node lists it. */
    int gpuOrdinal(String uuid) {
        return gpuOrdinal.getOrDefault(uuid, -1);
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

    /** Node ordinal → whether it is one of {@code names}. */
    boolean[] nodeMask(java.util.Collection<String> names) {
        boolean[] mask = new boolean[nodes.size()];
        for (String name : names) {
            Integer n = nodeOrdinal.get(name);
            if (n != null) {
                mask[n] = true;
            }
        }
        return mask;
    }

    /** GPU ordinal → instances of {@code function} on it; empty when the function runs nowhere. */
    Map<Integer, Integer> gpusHosting(String function) {
        return functionGpus.getOrDefault(function, Map.of());
    }

    /**
     * {@code function}'s partners: the other functions sharing a GPU with one of its instances (a training job
     * its earlier instance sits beside). The other GPUs of a partner are where the paper's workload affinity
     * sends the function's next instance (§3.3, Principle 1), so that every worker of that job has the same
     * neighbour.
     */
    Set<String> partners(String function) {
        Map<Integer, Integer> own = gpusHosting(function);
        if (own.isEmpty()) {
            return Set.of();
        }
        Set<String> partners = new HashSet<>();
        for (int g : own.keySet()) {
            partners.addAll(gpuFunctions[g].keySet());
        }
        partners.remove(function);
        return partners;
    }

    /** Whether GPU {@code g} hosts an instance of any of {@code functions}. */
    boolean hostsAny(int g, Set<String> functions) {
        Map<String, Integer> residents = gpuFunctions[g];
        if (residents == null || functions.isEmpty()) {
            return false;
        }
        for (String f : residents.keySet()) {
            if (functions.contains(f)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The shape of a booked instance: its SM request per GPU and its GPU count. A model split into pipeline
     * stages counts by its largest stage.
     */
    record RequestClass(int requestMilli, int gpus) {
        static RequestClass of(int[] requests) {
            int largest = 0;
            for (int r : requests) {
                largest = Math.max(largest, r);
            }
            return new RequestClass(largest, requests.length);
        }
    }

    /** Booked instances by shape. */
    Map<RequestClass, Integer> requestMix() {
        return requestMix;
    }

    /** Changes whenever {@link #requestMix()} does. */
    long requestMixVersion() {
        return requestMixVersion;
    }

    // ---- reads, public ----

    public long largestGpuMemoryMib() {
        return largestGpuMemory;
    }

    public int mostGpusPerNode() {
        return mostGpusPerNode;
    }

    public int totalGpus() {
        return gpus.length;
    }

    /** GPUs with at least one instance: the cost every policy minimises. */
    public int activeGpuCount() {
        return activeGpus.size();
    }

    public int placedInstances() {
        return bookings.size();
    }

    public boolean isPlaced(String instanceId) {
        return bookings.containsKey(instanceId);
    }

    /** What is booked on one GPU, or null for an unknown UUID. */
    public GpuUsage usage(String gpuUuid) {
        Integer g = gpuOrdinal.get(gpuUuid);
        return g == null ? null : usage(g);
    }

    /** Every active GPU's usage, in GPU order. */
    public List<GpuUsage> activeUsage() {
        List<Integer> ordinals = new ArrayList<>(activeGpus.size());
        for (int i = 0; i < activeGpus.size(); i++) {
            ordinals.add(activeGpus.get(i));
        }
        Collections.sort(ordinals);
        return ordinals.stream().map(this::usage).toList();
    }

    private GpuUsage usage(int g) {
        return new GpuUsage(gpus[g].uuid(), nodeName(nodeOfGpu[g]), requestSum[g], limitSum[g], memoryUsed[g],
                gpus[g].memoryMib(), instancesOnGpu[g]);
    }

    /**
     * A GPU's bookings.
     *
     * @param requestMilli Σ SM request, thousandths of the GPU
     * @param limitMilli Σ SM limit, thousandths of the GPU
     */
    public record GpuUsage(String uuid, String node, int requestMilli, int limitMilli, long memoryMib,
            long capacityMib, int instances) {}

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
