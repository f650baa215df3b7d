package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeSet;

/**
 * The GPUs of a cluster and what is booked on each: Σ SM request, Σ SM limit, Σ memory and the functions
 * hosted; and, per node, the CPU and memory booked by requests that ask for them. Placement policies read it;
 * {@link #apply} and {@link #release} change it.
 *
 * <p>Indexed by dense ordinals with the active GPUs, used nodes and empty nodes kept as sets, so that a
 * decision costs time in the number of <em>active</em> GPUs, not of all GPUs: a 1,000-node simulation
 * places thousands of instances in milliseconds. Workload affinity is indexed too: which GPUs each function
 * occupies and which functions share a GPU with it, as int sets kept up to date on every booking, so that
 * finding a function's affinity GPUs walks those sets instead of asking a hash map per candidate GPU.
 * Not thread-safe; adapters serialise access.
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
    /** Instances booked on each node, CPU-only ones included: a node is empty when this is 0. */
    private final int[] instancesOnNode;
    private final long[] cpuCapacity;
    private final long[] hostMemoryCapacity;
    private final long[] cpuUsed;
    private final long[] hostMemoryUsed;

    private final OrdinalSet activeGpus;
    /** Nodes with anything booked, GPU or CPU. */
    private final OrdinalSet usedNodes;
    /** Used nodes that still have an idle GPU: where a new GPU is opened first. */
    private final OrdinalSet partialNodes;
    /**
     * Empty nodes grouped by everything a request can select a node on — per GPU its model, memory and SM count,
     * and the node's CPU and memory — so that one empty node per group stands for all of its group.
     */
    private final Map<String, NavigableSet<Integer>> emptyNodesByShape = new LinkedHashMap<>();
    private final String[] shapeOfNode;

    /** Function name → dense id, for the affinity index. Ids are never reused. */
    private final Map<String, Integer> functionIds = new HashMap<>();
    /** Function id → GPU ordinal → instances of that function on the GPU. */
    private final List<IntCounts> functionGpus = new ArrayList<>();
    /** Function id → partner function id → GPUs the two both occupy. */
    private final List<IntCounts> functionPartners = new ArrayList<>();
    /** GPU ordinal → function id → instances of that function on the GPU (the same counts, read the other way). */
    private final IntCounts[] gpuFunctions;
    /** GPU ordinal → function id → Σ SM limit of that function's instances on the GPU. */
    private final IntCounts[] gpuFunctionLimits;
    private final AffinityMarks marks;

    private final Map<String, Booking> bookings = new HashMap<>();
    /** Booked instances by shape: the request mix the cluster serves. */
    private final Map<RequestClass, Integer> requestMix = new HashMap<>();
    private long requestMixVersion;
    private final long largestGpuMemory;
    private final int mostGpusPerNode;

    private record Booking(int function, int node, int[] gpuOrdinals, int[] requests, int[] limits, long[] memory,
            long cpuMilli, long hostMemoryMib) {}

    public ClusterState(List<NodeInventory> inventory) {
        this.nodes = List.copyOf(inventory);
        int total = nodes.stream().mapToInt(n -> n.gpus().size()).sum();
        gpus = new GpuDevice[total];
        nodeOfGpu = new int[total];
        firstGpuOfNode = new int[nodes.size() + 1];
        shapeOfNode = new String[nodes.size()];
        cpuCapacity = new long[nodes.size()];
        hostMemoryCapacity = new long[nodes.size()];
        int g = 0;
        long largest = 0;
        int most = 0;
        for (int n = 0; n < nodes.size(); n++) {
            NodeInventory node = nodes.get(n);
            if (nodeOrdinal.put(node.name(), n) != null) {
                throw new IllegalArgumentException("node " + node.name() + " is listed twice");
            }
            firstGpuOfNode[n] = g;
            cpuCapacity[n] = node.cpuMilli();
            hostMemoryCapacity[n] = node.memoryMib();
            StringBuilder shape = new StringBuilder();
            for (GpuDevice gpu : node.gpus()) {
                if (gpuOrdinal.put(gpu.uuid(), g) != null) {
                    throw new IllegalArgumentException("GPU " + gpu.uuid() + " is listed twice");
                }
                gpus[g] = gpu;
                nodeOfGpu[g] = n;
                largest = Math.max(largest, gpu.memoryMib());
                shape.append(gpu.model()).append('/').append(gpu.memoryMib()).append('/').append(gpu.smCount()).append(',');
                g++;
            }
            shape.append("cpu=").append(node.cpuMilli()).append(",mem=").append(node.memoryMib());
            most = Math.max(most, node.gpus().size());
            shapeOfNode[n] = shape.toString();
            emptyNodesByShape.computeIfAbsent(shapeOfNode[n], k -> new TreeSet<>()).add(n);
        }
        firstGpuOfNode[nodes.size()] = g;
        largestGpuMemory = largest;
        mostGpusPerNode = most;
        requestSum = new int[total];
        limitSum = new int[total];
        memoryUsed = new long[total];
        instancesOnGpu = new int[total];
        gpuFunctions = new IntCounts[total];
        gpuFunctionLimits = new IntCounts[total];
        activeGpusOfNode = new int[nodes.size()];
        instancesOnNode = new int[nodes.size()];
        cpuUsed = new long[nodes.size()];
        hostMemoryUsed = new long[nodes.size()];
        activeGpus = new OrdinalSet(total);
        usedNodes = new OrdinalSet(nodes.size());
        partialNodes = new OrdinalSet(nodes.size());
        marks = new AffinityMarks(total);
    }

    // ---- changes ----

    /**
     * Books a placement decided by a policy, asking nothing of the node's CPU and memory. Refuses (and changes
     * nothing) when the instance is already booked, a GPU is unknown, or a GPU's memory would be exceeded.
     */
    public void apply(String instanceId, String function, PlacementDecision.Placed placed) {
        book(instanceId, function, placed, 0, 0);
    }

    /**
     * Books a placement of {@code request} decided by a policy: its GPU slots, and its CPU and memory on the
     * node. Refuses (and changes nothing) when the instance is already booked, a GPU or the node is unknown, or a
     * GPU's memory or the node's CPU or memory would be exceeded: those are the hard limits.
     */
    public void apply(InstanceRequest request, PlacementDecision.Placed placed) {
        book(request.id(), request.function(), placed, request.cpuMilli(), request.hostMemoryMib());
    }

    private void book(String instanceId, String function, PlacementDecision.Placed placed, long cpu, long hostMemory) {
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
        // The slots name the node; a booking without slots (CPU-only) names it in the decision.
        int node;
        if (size > 0) {
            node = nodeOfGpu[ordinals[0]];
        } else {
            Integer n = nodeOrdinal.get(placed.node());
            if (n == null) {
                throw new IllegalArgumentException("unknown node " + placed.node());
            }
            node = n;
        }
        if (cpu > cpuFree(node) || hostMemory > hostMemoryFree(node)) {
            throw new IllegalStateException("node " + nodeName(node) + " has " + cpuFree(node) + " milli-CPU and "
                    + hostMemoryFree(node) + " MiB free, " + cpu + " milli-CPU and " + hostMemory + " MiB asked");
        }
        int f = functionId(function);
        for (int i = 0; i < size; i++) {
            add(ordinals[i], f, requests[i], limits[i], memory[i], +1);
        }
        cpuUsed[node] += cpu;
        hostMemoryUsed[node] += hostMemory;
        countOnNode(node, +1);
        bookings.put(instanceId, new Booking(f, node, ordinals, requests, limits, memory, cpu, hostMemory));
        // A booking of memory alone (a parked instance) is no shape a new placement asks for.
        if (RequestClass.of(requests).requestMilli() > 0) {
            requestMix.merge(RequestClass.of(requests), 1, Integer::sum);
            requestMixVersion++;
        }
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
        cpuUsed[booking.node()] -= booking.cpuMilli();
        hostMemoryUsed[booking.node()] -= booking.hostMemoryMib();
        countOnNode(booking.node(), -1);
        if (RequestClass.of(booking.requests()).requestMilli() > 0) {
            if (requestMix.merge(RequestClass.of(booking.requests()), -1, Integer::sum) <= 0) {
                requestMix.remove(RequestClass.of(booking.requests()));
            }
            requestMixVersion++;
        }
        return true;
    }

    private int functionId(String function) {
        Integer id = functionIds.get(function);
        if (id == null) {
            id = functionIds.size();
            functionIds.put(function, id);
            functionGpus.add(new IntCounts(4));
            functionPartners.add(new IntCounts(4));
        }
        return id;
    }

    private void add(int g, int f, int request, int limit, long memory, int count) {
        boolean wasActive = instancesOnGpu[g] > 0;
        requestSum[g] += request;
        limitSum[g] += limit;
        memoryUsed[g] += memory;
        instancesOnGpu[g] += count;
        IntCounts residents = gpuFunctions[g] == null ? (gpuFunctions[g] = new IntCounts(2)) : gpuFunctions[g];
        boolean arrives = count > 0 && !residents.contains(f);
        residents.add(f, count);
        if (limit != 0) {
            (gpuFunctionLimits[g] == null ? (gpuFunctionLimits[g] = new IntCounts(2)) : gpuFunctionLimits[g]).add(f, limit);
        }
        boolean leaves = count < 0 && !residents.contains(f);
        functionGpus.get(f).add(g, count);
        if (arrives || leaves) {
            // f now shares (or no longer shares) this GPU with every other function on it.
            int delta = arrives ? 1 : -1;
            for (int i = 0; i < residents.size(); i++) {
                int other = residents.key(i);
                if (other != f) {
                    functionPartners.get(f).add(other, delta);
                    functionPartners.get(other).add(f, delta);
                }
            }
        }
        boolean isActive = instancesOnGpu[g] > 0;
        if (wasActive != isActive) {
            int n = nodeOfGpu[g];
            if (isActive) {
                activeGpus.add(g);
                activeGpusOfNode[n]++;
            } else {
                activeGpus.remove(g);
                activeGpusOfNode[n]--;
            }
            updatePartial(n);
        }
    }

    private void countOnNode(int n, int count) {
        instancesOnNode[n] += count;
        if (count > 0 && instancesOnNode[n] == 1) {
            usedNodes.add(n);
            emptyNodesByShape.get(shapeOfNode[n]).remove(n);
        } else if (count < 0 && instancesOnNode[n] == 0) {
            usedNodes.remove(n);
            emptyNodesByShape.get(shapeOfNode[n]).add(n);
        }
        updatePartial(n);
    }

    private void updatePartial(int n) {
        int size = firstGpuOfNode[n + 1] - firstGpuOfNode[n];
        if (instancesOnNode[n] > 0 && activeGpusOfNode[n] < size) {
            partialNodes.add(n);
        } else {
            partialNodes.remove(n);
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

    /** Σ SM limit of the instances of function {@code f} ({@link #knownFunctionId}) on GPU {@code g}; 0 for f < 0. */
    int functionLimitSum(int g, int f) {
        return f < 0 || gpuFunctionLimits[g] == null ? 0 : gpuFunctionLimits[g].count(f);
    }

    /** The dense id of {@code function}, or -1 when nothing of it was ever booked (a read never makes an id). */
    int knownFunctionId(String function) {
        return functionIds.getOrDefault(function, -1);
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

    /** CPU of node {@code n} not booked yet, thousandths of a core ({@link NodeInventory#UNLIMITED}-ish when not modelled). */
    long cpuFree(int n) {
        return cpuCapacity[n] - cpuUsed[n];
    }

    long hostMemoryFree(int n) {
        return hostMemoryCapacity[n] - hostMemoryUsed[n];
    }

    long cpuCapacity(int n) {
        return cpuCapacity[n];
    }

    long hostMemoryCapacity(int n) {
        return hostMemoryCapacity[n];
    }

    long cpuUsed(int n) {
        return cpuUsed[n];
    }

    long hostMemoryUsed(int n) {
        return hostMemoryUsed[n];
    }

    /** Whether node {@code n} has the CPU and memory {@code req} asks for free. */
    boolean hostFits(int n, InstanceRequest req) {
        return req.cpuMilli() <= cpuFree(n) && req.hostMemoryMib() <= hostMemoryFree(n);
    }

    /** Whether anything is booked on node {@code n}. */
    boolean isUsed(int n) {
        return instancesOnNode[n] > 0;
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

    /**
     * The lowest-numbered empty node of each group of interchangeable empty nodes (same GPU models, memory and SM
     * counts, same CPU and memory), among the allowed nodes (all when null).
     */
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

    /**
     * Marks, for one decision about {@code function}, the GPUs its own instances occupy and its affinity GPUs
     * (G_WA): the GPUs of its partners — the other functions sharing a GPU with one of its instances, a training
     * job its earlier instance sits beside — that it does not occupy itself. The paper's workload affinity
     * (§3.3, Principle 1) sends the function's next instance there, so that every worker of that job has the same
     * neighbour. Valid until the next call; costs time in the partners' GPUs, not in all active GPUs.
     */
    AffinityMarks affinity(String function) {
        Integer f = functionIds.get(function);
        marks.next();
        if (f == null) {
            return marks;
        }
        IntCounts own = functionGpus.get(f);
        for (int i = 0; i < own.size(); i++) {
            marks.markOwn(own.key(i));
        }
        IntCounts partners = functionPartners.get(f);
        for (int i = 0; i < partners.size(); i++) {
            IntCounts theirs = functionGpus.get(partners.key(i));
            for (int j = 0; j < theirs.size(); j++) {
                marks.markBeside(theirs.key(j));
            }
        }
        return marks;
    }

    /** One decision's view of a function's affinity: stamps per GPU, so a check is an array read. */
    static final class AffinityMarks {
        private final int[] own;
        private final int[] beside;
        private int[] besideList = new int[16];
        private int besideCount;
        private int epoch;

        AffinityMarks(int gpus) {
            own = new int[gpus];
            beside = new int[gpus];
        }

        private void next() {
            epoch++;
            besideCount = 0;
        }

        private void markOwn(int g) {
            own[g] = epoch;
        }

        private void markBeside(int g) {
            if (own[g] != epoch && beside[g] != epoch) {
                beside[g] = epoch;
                if (besideCount == besideList.length) {
                    besideList = java.util.Arrays.copyOf(besideList, besideCount * 2);
                }
                besideList[besideCount++] = g;
            }
        }

        /** Whether the function has an instance on GPU {@code g}. */
        boolean own(int g) {
            return own[g] == epoch;
        }

        /** Whether GPU {@code g} hosts one of the function's partners and not the function itself. */
        boolean beside(int g) {
            return beside[g] == epoch;
        }

        /** The affinity GPUs, each once, in no particular order. */
        int besideCount() {
            return besideCount;
        }

        int besideGpu(int i) {
            return besideList[i];
        }
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
