package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Fragmentation Gradient Descent (FGD), the baseline of Weng et al., "Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023, as their simulator defines it
 * (github.com/hkust-adsl/kubernetes-scheduler-simulator, {@code pkg/utils/frag.go}, {@code GetNodePodFrag} and
 * {@code NodeGpuShareFragAmount}; {@code pkg/simulator/plugin/fgd_score.go}).
 *
 * <p>A node's fragmentation for one task class m is the free GPU share (thousandths) that m cannot use: when the
 * node has at least {@code m.gpus} GPUs of a model m may use with {@code m.requestMilli} free, and m's CPU free,
 * the free share of its other GPUs (too small, or of a model m may not use); otherwise (m cannot run on the node
 * at all: too few fitting GPUs, too little CPU, the wrong model) all of the node's free share. A CPU-only class
 * counts all of the node's free share too, as the authors' simulator does. The node's expected fragmentation is
 * that summed over the target workload, each class weighted by its popularity. FGD places a task where the
 * expected fragmentation grows least: a GPU-sharing task (one GPU, less than a whole one) tries every GPU of every
 * node where it fits; a task of whole GPUs takes, on each node, the GPUs that fit it most tightly; a CPU-only
 * task changes only the node's CPU. Ties go to the lower node, then the lower GPU ordinal.
 *
 * <p>The score is the exact change in expected fragmentation ({@link Scoring#EXACT}), or what the authors'
 * simulator makes of it ({@link Scoring#SIMULATOR}): {@code ⌊100 × sigmoid((before − after) / 1000)⌋}, an integer
 * 0..100, the highest winning, the first GPU of a node among equals and the first node among equals (their
 * scheduler takes the lexicographically smallest node name on a tie, {@code selectHost} in their fork of
 * Kubernetes 1.20.5, and names the nodes by a random permutation, {@code syncClusterResourceList}: the first node of
 * a shuffled list). GPU memory must still fit, as for every policy, but does not enter the score, nor does the
 * node's memory (it must fit, as the scheduler's NodeResourcesFit filter checks).
 */
public final class FragmentationGradientPlacement implements PlacementPolicy {

    /**
     * One class of task in the target workload.
     *
     * @param cpuMilli CPU per task, thousandths of a core (0 when CPU is not modelled)
     * @param requestMilli share of each GPU, 1..1000; 0 for a CPU-only class
     * @param gpus GPUs per task; 0 for a CPU-only class
     * @param gpuModels the GPU models the class may run on; empty for any
     * @param popularity relative frequency, positive (the constructor normalises the classes to sum to 1)
     */
    public record TaskClass(long cpuMilli, int requestMilli, int gpus, Set<String> gpuModels, double popularity) {
        public TaskClass {
            if (cpuMilli < 0) {
                throw new IllegalArgumentException("cpuMilli must be at least 0, got " + cpuMilli);
            }
            if (gpus < 0) {
                throw new IllegalArgumentException("gpus must be at least 0, got " + gpus);
            }
            if (gpus == 0 ? requestMilli != 0 : requestMilli < 1 || requestMilli > 1000) {
                throw new IllegalArgumentException("requestMilli must be in 1..1000 (0 for a CPU-only class), got "
                        + requestMilli);
            }
            if (!(popularity > 0) || Double.isInfinite(popularity)) {
                throw new IllegalArgumentException("popularity must be positive, got " + popularity);
            }
            gpuModels = Set.copyOf(gpuModels);
        }

        /** A class of GPU tasks on any model, CPU not modelled. */
        public TaskClass(int requestMilli, int gpus, double popularity) {
            this(0, requestMilli, gpus, Set.of(), popularity);
        }

        TaskClass withPopularity(double p) {
            return new TaskClass(cpuMilli, requestMilli, gpus, gpuModels, p);
        }

        boolean runsOn(String model) {
            return gpuModels.isEmpty() || gpuModels.contains(model);
        }
    }

    /** How a placement's change in expected fragmentation becomes a score. */
    public enum Scoring {
        /** The change itself, smallest wins. */
        EXACT,
        /** ⌊100 × sigmoid(−change / 1000)⌋, highest wins, as the authors' {@code fgd_score.go} scores it. */
        SIMULATOR
    }

    private static final double EPSILON = 1e-9;

    private final Scoring scoring;

    private final List<TaskClass> workload;
    private final long[] classCpu;
    private final int[] classMilli;
    private final int[] classGpus;
    private final double[] classWeight;
    private final List<Set<String>> classModels;
    /** The distinct CPU amounts the classes ask, ascending: a node's CPU matters only by how many it covers. */
    private final long[] cpuLevels;
    /** Expected fragmentation by node key: a pure function of it, so shared by all decisions. */
    private final Map<String, Double> memo = new HashMap<>();
    /** The state the node cache describes: a policy may be asked about another state at any time. */
    private ClusterState cachedState;
    /** Per node: Σ request per GPU and CPU booked when last seen, its memo key, F_n(M) then. */
    private int[][] cachedRequests;
    private long[] cachedCpuUsed;
    private String[] cachedKey;
    private double[] cachedExpected;
    /** Per node of the cached state: the index of each GPU's model in {@link #models}. */
    private int[][] gpuModel;
    private final List<String> models = new ArrayList<>();
    /** Per model index and class: whether the class may run on the model. */
    private boolean[][] access = new boolean[0][];

    public FragmentationGradientPlacement(List<TaskClass> workload) {
        this(workload, Scoring.EXACT);
    }

    public FragmentationGradientPlacement(List<TaskClass> workload, Scoring scoring) {
        this.scoring = scoring;
        if (workload.isEmpty()) {
            throw new IllegalArgumentException("the workload needs at least one task class");
        }
        double total = workload.stream().mapToDouble(TaskClass::popularity).sum();
        this.workload = workload.stream().map(c -> c.withPopularity(c.popularity() / total)).toList();
        classCpu = this.workload.stream().mapToLong(TaskClass::cpuMilli).toArray();
        classMilli = this.workload.stream().mapToInt(TaskClass::requestMilli).toArray();
        classGpus = this.workload.stream().mapToInt(TaskClass::gpus).toArray();
        classWeight = this.workload.stream().mapToDouble(TaskClass::popularity).toArray();
        classModels = this.workload.stream().map(TaskClass::gpuModels).toList();
        cpuLevels = this.workload.stream().mapToLong(TaskClass::cpuMilli).distinct().sorted().toArray();
    }

    /**
     * The target workload as the FGD simulator derives it from a pod list ({@code GetTypicalPods} in
     * {@code pkg/utils/frag.go}): the classes of (CPU, share, GPU count, GPU models) by decreasing count, ties
     * by those in decreasing order, the fewest that cover {@code coverage} (0..1] of the requests, with
     * popularities renormalised over them (the authors' experiments use 0.95). CPU-only requests make classes of
     * their own, as in the authors' experiments ({@code isInvolvedCpuPods: true}).
     */
    public static List<TaskClass> workloadOf(List<InstanceRequest> requests, double coverage) {
        if (requests.isEmpty()) {
            throw new IllegalArgumentException("no requests to derive a workload from");
        }
        if (!(coverage > 0 && coverage <= 1)) {
            throw new IllegalArgumentException("coverage must be in (0, 1], got " + coverage);
        }
        record Key(long cpu, int milli, int gpus, String models) {}
        Map<Key, Integer> counts = new HashMap<>();
        Map<Key, Set<String>> modelsOf = new HashMap<>();
        for (InstanceRequest r : requests) {
            Key k = new Key(r.cpuMilli(), r.requestMilli(), r.gpus(), String.join("|", new TreeSet<>(r.gpuModels())));
            counts.merge(k, 1, Integer::sum);
            modelsOf.putIfAbsent(k, r.gpuModels());
        }
        List<Map.Entry<Key, Integer>> classes = new ArrayList<>(counts.entrySet());
        Comparator<Key> byShape = Comparator.comparingLong(Key::cpu).thenComparingInt(Key::milli)
                .thenComparingInt(Key::gpus).thenComparing(Key::models);
        classes.sort(Comparator.<Map.Entry<Key, Integer>>comparingInt(Map.Entry::getValue)
                .thenComparing(Map.Entry::getKey, byShape).reversed());
        List<TaskClass> out = new ArrayList<>();
        long covered = 0;
        for (Map.Entry<Key, Integer> e : classes) {
            if (covered >= coverage * requests.size() - EPSILON) {
                break;
            }
            covered += e.getValue();
            Key k = e.getKey();
            out.add(new TaskClass(k.cpu(), k.milli(), k.gpus(), modelsOf.get(k), e.getValue()));
        }
        double sum = covered;
        return out.stream().map(c -> c.withPopularity(c.popularity() / sum)).toList();
    }

    @Override
    public String name() {
        return scoring == Scoring.EXACT ? "fgd" : "fgd-simulator";
    }

    /** What a change in expected fragmentation is worth to the search, lower better. */
    private double cost(double delta) {
        if (scoring == Scoring.EXACT) {
            return delta;
        }
        return -Math.floor(1.0 / (1.0 + Math.exp(delta / 1000)) * 100);
    }

    /** The task classes, popularities normalised to sum to 1. */
    public List<TaskClass> workload() {
        return workload;
    }

    /**
     * F_n(m) for a node of GPUs of models m may use and CPU enough for it: the free share (thousandths) of a node
     * whose GPUs have {@code free} free that task class {@code m} cannot use.
     */
    public static long fragmentation(int[] free, TaskClass m) {
        if (m.gpus() == 0) {
            return Arrays.stream(free).asLongStream().sum();
        }
        return fragmentation(free, m.requestMilli(), m.gpus());
    }

    static long fragmentation(int[] free, int milli, int gpus) {
        long total = 0;
        long tooSmall = 0;
        int fitting = 0;
        for (int f : free) {
            total += f;
            if (f >= milli) {
                fitting++;
            } else {
                tooSmall += f;
            }
        }
        return fitting >= gpus ? tooSmall : total;
    }

    /** F_n(M) of a node of GPUs of one model every class may use, CPU not modelled: Σ popularity × F_n(m). */
    public double expectedFragmentation(int[] free) {
        int[] model = new int[free.length];
        Arrays.fill(model, modelIndex(null));
        return expected(free, model, Long.MAX_VALUE);
    }

    private double expected(int[] free, int[] model, long cpuLeft) {
        String key = key(free, model, cpuLeft);
        Double known = memo.get(key);
        if (known != null) {
            return known;
        }
        double sum = 0;
        for (int c = 0; c < classMilli.length; c++) {
            sum += classWeight[c] * fragmentation(free, model, cpuLeft, c);
        }
        if (memo.size() > 1_000_000) {
            memo.clear();
        }
        memo.put(key, sum);
        return sum;
    }

    private long fragmentation(int[] free, int[] model, long cpuLeft, int c) {
        long total = 0;
        long unusable = 0;
        int fitting = 0;
        int milli = classMilli[c];
        for (int i = 0; i < free.length; i++) {
            total += free[i];
            if (classGpus[c] > 0 && free[i] >= milli && access[model[i]][c]) {
                fitting++;
            } else {
                unusable += free[i];
            }
        }
        return classGpus[c] > 0 && fitting >= classGpus[c] && cpuLeft >= classCpu[c] ? unusable : total;
    }

    /** A node's state as F_n(M) sees it: GPUs as (model, free) pairs in sorted order, and how many classes' CPU it has. */
    private String key(int[] free, int[] model, long cpuLeft) {
        long[] pairs = new long[free.length];
        for (int i = 0; i < free.length; i++) {
            pairs[i] = ((long) model[i] << 16) | free[i];
        }
        Arrays.sort(pairs);
        char[] chars = new char[2 * pairs.length + 1];
        chars[0] = (char) cpuLevel(cpuLeft);
        for (int i = 0; i < pairs.length; i++) {
            chars[2 * i + 1] = (char) (pairs[i] >>> 16);
            chars[2 * i + 2] = (char) pairs[i];
        }
        return new String(chars);
    }

    /** How many of the classes' CPU amounts {@code cpuLeft} covers: all a node's CPU means to F_n(M). */
    private int cpuLevel(long cpuLeft) {
        int level = Arrays.binarySearch(cpuLevels, cpuLeft);
        return level >= 0 ? level + 1 : -level - 1;
    }

    private int modelIndex(String model) {
        int i = models.indexOf(model);
        if (i >= 0) {
            return i;
        }
        models.add(model);
        access = Arrays.copyOf(access, models.size());
        boolean[] row = new boolean[classMilli.length];
        for (int c = 0; c < row.length; c++) {
            row[c] = model == null || classModels.get(c).isEmpty() || classModels.get(c).contains(model);
        }
        access[models.size() - 1] = row;
        return models.size() - 1;
    }

    private static int free(ClusterState state, int g) {
        return Math.max(0, 1000 - state.requestSum(g));
    }

    /** Refreshes node {@code n}'s cache entry when any of its GPUs' bookings or its CPU changed since it was made. */
    private void refresh(ClusterState state, int n) {
        int first = state.firstGpu(n);
        int k = state.endGpu(n) - first;
        int[] seen = cachedRequests[n];
        boolean same = seen != null && cachedCpuUsed[n] == state.cpuUsed(n);
        for (int i = 0; same && i < k; i++) {
            same = seen[i] == state.requestSum(first + i);
        }
        if (same) {
            return;
        }
        int[] requests = new int[k];
        int[] free = new int[k];
        for (int i = 0; i < k; i++) {
            requests[i] = state.requestSum(first + i);
            free[i] = free(state, first + i);
        }
        cachedRequests[n] = requests;
        cachedCpuUsed[n] = state.cpuUsed(n);
        cachedKey[n] = key(free, gpuModel[n], state.cpuFree(n));
        cachedExpected[n] = expected(free, gpuModel[n], state.cpuFree(n));
    }

    private void prepare(ClusterState state) {
        if (cachedState == state && cachedRequests != null && cachedRequests.length == state.nodeCount()) {
            return;
        }
        cachedState = state;
        int nodes = state.nodeCount();
        cachedRequests = new int[nodes][];
        cachedCpuUsed = new long[nodes];
        cachedKey = new String[nodes];
        cachedExpected = new double[nodes];
        gpuModel = new int[nodes][];
        for (int n = 0; n < nodes; n++) {
            int first = state.firstGpu(n);
            gpuModel[n] = new int[state.endGpu(n) - first];
            for (int i = 0; i < gpuModel[n].length; i++) {
                gpuModel[n][i] = modelIndex(state.gpu(first + i).model());
            }
        }
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        prepare(state);
        boolean sharing = req.gpus() == 1 && req.requestMilli() < 1000;
        double bestDelta = Double.POSITIVE_INFINITY;
        int bestNode = -1;
        int[] bestGpus = null;
        Set<String> seen = new HashSet<>();
        for (int n = 0; n < state.nodeCount(); n++) {
            int first = state.firstGpu(n);
            int k = state.endGpu(n) - first;
            if (k < req.gpus() || !state.hostFits(n, req)) {
                continue;
            }
            int[] free = new int[k];
            boolean[] fits = new boolean[k];
            int fitting = 0;
            boolean memoryBinds = false;
            for (int i = 0; i < k; i++) {
                free[i] = free(state, first + i);
                boolean roomy = req.gpus() > 0 && free[i] >= req.requestMilli() && req.runsOn(state.gpu(first + i));
                fits[i] = roomy && state.freeMemory(first + i) >= req.memoryMib();
                fitting += fits[i] ? 1 : 0;
                memoryBinds |= roomy && !fits[i];
            }
            if (fitting < req.gpus()) {
                continue;
            }
            refresh(state, n);
            long cpuAfter = state.cpuFree(n) - req.cpuMilli();
            // Nodes alike in what F_n(M) sees, before and after, score alike unless memory rules out a GPU: the
            // lowest node stands for all.
            if (!memoryBinds && !seen.add(cachedKey[n] + (char) cpuLevel(cpuAfter))) {
                continue;
            }
            double before = cachedExpected[n];
            int[] model = gpuModel[n];
            if (req.cpuOnly()) {
                double delta = cost(expected(free, model, cpuAfter) - before);
                if (delta < bestDelta - EPSILON) {
                    bestDelta = delta;
                    bestNode = n;
                    bestGpus = new int[0];
                }
            } else if (sharing) {
                Set<Integer> tried = new HashSet<>();
                for (int i = 0; i < k; i++) {
                    if (!fits[i] || !tried.add((model[i] << 16) | free[i])) {
                        continue;
                    }
                    int[] after = free.clone();
                    after[i] -= req.requestMilli();
                    double delta = cost(expected(after, model, cpuAfter) - before);
                    if (delta < bestDelta - EPSILON) {
                        bestDelta = delta;
                        bestNode = n;
                        bestGpus = new int[] {first + i};
                    }
                }
            } else {
                List<Integer> order = new ArrayList<>();
                for (int i = 0; i < k; i++) {
                    if (fits[i]) {
                        order.add(i);
                    }
                }
                order.sort(Comparator.comparingInt((Integer i) -> free[i]).thenComparingInt(i -> i));
                int[] after = free.clone();
                int[] chosen = new int[req.gpus()];
                for (int j = 0; j < req.gpus(); j++) {
                    int i = order.get(j);
                    after[i] -= req.requestMilli();
                    chosen[j] = first + i;
                }
                double delta = cost(expected(after, model, cpuAfter) - before);
                if (delta < bestDelta - EPSILON) {
                    bestDelta = delta;
                    bestNode = n;
                    bestGpus = chosen;
                }
            }
        }
        if (bestGpus == null) {
            return new PlacementDecision.Infeasible(req.cpuOnly()
                    ? "no node has " + req.cpuMilli() + " milli-CPU and " + req.hostMemoryMib() + " MiB of memory free"
                    : "no node has " + req.gpus() + " GPU(s) with " + req.memoryMib() + " MiB free" + HostFit.asked(req)
                            + " and room for SM request " + ComplementaryPlacement.percent(req.requestMilli()));
        }
        List<Slot> slots = new ArrayList<>();
        for (int g : bestGpus) {
            slots.add(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib()));
        }
        return new PlacementDecision.Placed(state.nodeName(bestNode), slots);
    }
}
