package io.dilu.core.placement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Fragmentation Gradient Descent (FGD), the baseline of Weng et al., "Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023.
 *
 * <p>A node's fragmentation for one task class m is the free GPU share (thousandths) that m cannot use: when
 * the node has at least {@code m.gpus} GPUs with {@code m.requestMilli} free, the free share of the GPUs
 * with less than {@code m.requestMilli} free; otherwise (m does not fit the node at all) all of the node's
 * free share. The node's expected fragmentation is that summed over the target workload, each class weighted
 * by its popularity. FGD places a task where the expected fragmentation grows least: for a GPU-sharing task
 * (one GPU, less than a whole one) it tries every GPU of every node; a task of whole GPUs takes, on each node,
 * the GPUs that fit it most tightly. Ties go to the lower node, then the lower GPU ordinal.
 *
 * <p>Differences from the authors' simulator: there is no CPU dimension (its "lack CPU" fragment types) and
 * no GPU-model constraint, as {@link ClusterState} books neither; the score is the exact change in expected
 * fragmentation, not its sigmoid rounded to an integer 0..100 with ties broken at random. GPU memory must
 * still fit, as for every policy, but does not enter the score.
 */
public final class FragmentationGradientPlacement implements PlacementPolicy {

    /**
     * One class of task in the target workload.
     *
     * @param requestMilli share of each GPU, 1..1000
     * @param gpus GPUs per task, at least 1
     * @param popularity relative frequency, positive (the constructor normalises the classes to sum to 1)
     */
    public record TaskClass(int requestMilli, int gpus, double popularity) {
        public TaskClass {
            if (requestMilli < 1 || requestMilli > 1000) {
                throw new IllegalArgumentException("requestMilli must be in 1..1000, got " + requestMilli);
            }
            if (gpus < 1) {
                throw new IllegalArgumentException("gpus must be at least 1, got " + gpus);
            }
            if (!(popularity > 0) || Double.isInfinite(popularity)) {
                throw new IllegalArgumentException("popularity must be positive, got " + popularity);
            }
        }
    }

    private static final double EPSILON = 1e-9;

    private final List<TaskClass> workload;
    private final int[] classMilli;
    private final int[] classGpus;
    private final double[] classWeight;
    /** Expected fragmentation by sorted free-share vector: a pure function of it, so shared by all decisions. */
    private final Map<String, Double> memo = new HashMap<>();
    /** The state the node cache describes: a policy may be asked about another state at any time. */
    private ClusterState cachedState;
    /** Per node: Σ request per GPU when last seen, the sorted free shares as a memo key, F_n(M) then. */
    private int[][] cachedRequests;
    private String[] cachedKey;
    private double[] cachedExpected;

    public FragmentationGradientPlacement(List<TaskClass> workload) {
        if (workload.isEmpty()) {
            throw new IllegalArgumentException("the workload needs at least one task class");
        }
        double total = workload.stream().mapToDouble(TaskClass::popularity).sum();
        this.workload = workload.stream()
                .map(c -> new TaskClass(c.requestMilli(), c.gpus(), c.popularity() / total)).toList();
        classMilli = this.workload.stream().mapToInt(TaskClass::requestMilli).toArray();
        classGpus = this.workload.stream().mapToInt(TaskClass::gpus).toArray();
        classWeight = this.workload.stream().mapToDouble(TaskClass::popularity).toArray();
    }

    /**
     * The target workload as the FGD simulator derives it from a pod list: the (share, GPU count) classes by
     * decreasing count, the fewest that cover {@code coverage} (0..1] of the requests, with popularities
     * renormalised over them (the authors' experiments use 0.95).
     */
    public static List<TaskClass> workloadOf(List<InstanceRequest> requests, double coverage) {
        if (requests.isEmpty()) {
            throw new IllegalArgumentException("no requests to derive a workload from");
        }
        if (!(coverage > 0 && coverage <= 1)) {
            throw new IllegalArgumentException("coverage must be in (0, 1], got " + coverage);
        }
        Map<List<Integer>, Integer> counts = new LinkedHashMap<>();
        for (InstanceRequest r : requests) {
            counts.merge(List.of(r.requestMilli(), r.gpus()), 1, Integer::sum);
        }
        List<Map.Entry<List<Integer>, Integer>> classes = new ArrayList<>(counts.entrySet());
        classes.sort(Comparator.<Map.Entry<List<Integer>, Integer>>comparingInt(Map.Entry::getValue).reversed()
                .thenComparing(e -> e.getKey().get(0)).thenComparing(e -> e.getKey().get(1)));
        List<TaskClass> out = new ArrayList<>();
        long covered = 0;
        for (Map.Entry<List<Integer>, Integer> e : classes) {
            if (covered >= coverage * requests.size() - EPSILON) {
                break;
            }
            covered += e.getValue();
            out.add(new TaskClass(e.getKey().get(0), e.getKey().get(1), e.getValue()));
        }
        double sum = covered;
        return out.stream().map(c -> new TaskClass(c.requestMilli(), c.gpus(), c.popularity() / sum)).toList();
    }

    @Override
    public String name() {
        return "fgd";
    }

    /** The task classes, popularities normalised to sum to 1. */
    public List<TaskClass> workload() {
        return workload;
    }

    /**
     * F_n(m): the free share (thousandths) of a node whose GPUs have {@code free} free that task class
     * {@code m} cannot use.
     */
    public static long fragmentation(int[] free, TaskClass m) {
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

    /** F_n(M): the node's fragmentation expected over the workload, Σ popularity × F_n(m). */
    public double expectedFragmentation(int[] free) {
        int[] sorted = free.clone();
        Arrays.sort(sorted);
        return expectedSorted(sorted);
    }

    private double expectedSorted(int[] sorted) {
        String key = key(sorted);
        Double known = memo.get(key);
        if (known != null) {
            return known;
        }
        double sum = 0;
        for (int c = 0; c < classMilli.length; c++) {
            sum += classWeight[c] * fragmentation(sorted, classMilli[c], classGpus[c]);
        }
        if (memo.size() > 1_000_000) {
            memo.clear();
        }
        memo.put(key, sum);
        return sum;
    }

    private static String key(int[] sorted) {
        char[] chars = new char[sorted.length];
        for (int i = 0; i < sorted.length; i++) {
            chars[i] = (char) sorted[i];
        }
        return new String(chars);
    }

    /** Refreshes node {@code n}'s cache entry when any of its GPUs' bookings changed since it was made. */
    private void refresh(ClusterState state, int n) {
        int first = state.firstGpu(n);
        int k = state.endGpu(n) - first;
        int[] seen = cachedRequests[n];
        boolean same = seen != null;
        for (int i = 0; same && i < k; i++) {
            same = seen[i] == state.requestSum(first + i);
        }
        if (same) {
            return;
        }
        int[] requests = new int[k];
        int[] sorted = new int[k];
        for (int i = 0; i < k; i++) {
            requests[i] = state.requestSum(first + i);
            sorted[i] = Math.max(0, 1000 - requests[i]);
        }
        Arrays.sort(sorted);
        cachedRequests[n] = requests;
        cachedKey[n] = key(sorted);
        cachedExpected[n] = expectedSorted(sorted);
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest req) {
        if (cachedState != state || cachedRequests == null || cachedRequests.length != state.nodeCount()) {
            cachedState = state;
            cachedRequests = new int[state.nodeCount()][];
            cachedKey = new String[state.nodeCount()];
            cachedExpected = new double[state.nodeCount()];
        }
        boolean sharing = req.gpus() == 1 && req.requestMilli() < 1000;
        double bestDelta = Double.POSITIVE_INFINITY;
        int bestNode = -1;
        int[] bestGpus = null;
        Set<String> seen = new HashSet<>();
        for (int n = 0; n < state.nodeCount(); n++) {
            int first = state.firstGpu(n);
            int k = state.endGpu(n) - first;
            if (k < req.gpus()) {
                continue;
            }
            int[] free = new int[k];
            boolean[] fits = new boolean[k];
            int fitting = 0;
            boolean memoryBinds = false;
            for (int i = 0; i < k; i++) {
                free[i] = Math.max(0, 1000 - state.requestSum(first + i));
                boolean roomy = free[i] >= req.requestMilli();
                fits[i] = roomy && state.freeMemory(first + i) >= req.memoryMib() && req.runsOn(state.gpu(first + i));
                fitting += fits[i] ? 1 : 0;
                memoryBinds |= roomy && !fits[i];
            }
            if (fitting < req.gpus()) {
                continue;
            }
            refresh(state, n);
            // Nodes alike in free shares score alike, unless memory rules out a GPU: the lowest node stands for all.
            if (!memoryBinds && !seen.add(cachedKey[n])) {
                continue;
            }
            double before = cachedExpected[n];
            if (sharing) {
                Set<Integer> tried = new HashSet<>();
                for (int i = 0; i < k; i++) {
                    if (!fits[i] || !tried.add(free[i])) {
                        continue;
                    }
                    int[] after = free.clone();
                    after[i] -= req.requestMilli();
                    Arrays.sort(after);
                    double delta = expectedSorted(after) - before;
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
                Arrays.sort(after);
                double delta = expectedSorted(after) - before;
                if (delta < bestDelta - EPSILON) {
                    bestDelta = delta;
                    bestNode = n;
                    bestGpus = chosen;
                }
            }
        }
        if (bestGpus == null) {
            return new PlacementDecision.Infeasible("no node has " + req.gpus() + " GPU(s) with " + req.memoryMib()
                    + " MiB free and room for SM request " + ComplementaryPlacement.percent(req.requestMilli()));
        }
        List<Slot> slots = new ArrayList<>();
        for (int g : bestGpus) {
            slots.add(new Slot(state.gpu(g).uuid(), req.requestMilli(), req.limitMilli(), req.memoryMib()));
        }
        return new PlacementDecision.Placed(state.nodeName(bestNode), slots);
    }
}
