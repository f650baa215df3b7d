package io.dilu.simulator;

import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * An openb pod list placed as Weng et al.'s simulator loads a cluster to measure a policy (USENIX ATC'23; their
 * code at github.com/hkust-adsl/kubernetes-scheduler-simulator):
 *
 * <ul>
 *   <li>the pods of the list, CPU-only ones included, sorted by name and shuffled with a seed
 *       ({@code SortClusterPods} with {@code shufflePod: true}, as {@code generate_run_scripts.py} runs every
 *       experiment), then pods drawn at random from the list and appended until the next draw would take the
 *       arrived GPU share past 130% of the cluster's ({@code TunePodsByNodeTotalResource}, {@code tuneUpPods}; a
 *       list above it loses pods at random instead, {@code tuneDownPods}) — all in {@code pkg/simulator/simulator.go};</li>
 *   <li>each arrival placed once or skipped, nothing departs ({@code SchedulePods});</li>
 *   <li>after every arrival, the GPU share allocated and the GPU share arrived so far, failed pods included
 *       ({@code [Alloc]} in {@code pkg/simulator/analysis.go}); the figure the authors publish is the allocated
 *       share at the point where the arrived share is 130% of the cluster's: the mean of the allocated shares,
 *       each rounded to 0.01%, of the arrivals whose arrived share rounds to 130%, or to 129–131% when none does
 *       ({@code experiments/analysis/merge_alloc_discrete.py}).</li>
 * </ul>
 *
 * Java's generator draws the shuffles and the resampling, not Go's, so no run repeats one of theirs draw for draw.
 */
public final class OpenbSimulation {

    /** Arrived GPU share to load the cluster to, as a multiple of its capacity (the authors' {@code -tune 1.3}). */
    public static final double LOAD = 1.3;
    /** The first seed (the authors repeat with 42..51). */
    public static final long FIRST_SEED = 42;
    /** Share of the pods whose classes make FGD's target workload (the authors' {@code podPopularityThreshold}, 95). */
    public static final double FGD_COVERAGE = 0.95;

    private OpenbSimulation() {}

    /**
     * What one policy allocated of the arrivals.
     *
     * @param percent the authors' figure: allocated GPU share, percent of the cluster's, where 130% has arrived
     * @param finalPercent allocated GPU share once every arrival has been tried
     * @param unplacedGpuPods GPU pods no node took
     * @param unplacedCpuPods CPU-only pods no node took
     */
    public record Allocation(double percent, double finalPercent, int unplacedGpuPods, int unplacedCpuPods,
            int activeGpus, double seconds) {}

    /** The pods of a list as requests: with {@code host}, every pod with its CPU and memory; else the GPU pods only. */
    public static List<InstanceRequest> requests(List<OpenbTrace.Pod> pods, List<NodeInventory> nodes, boolean host) {
        long smallest = nodes.stream().flatMap(n -> n.gpus().stream()).mapToLong(g -> g.memoryMib()).min()
                .orElse(OpenbTrace.UNKNOWN_MODEL_MIB);
        return pods.stream().filter(p -> host || !p.cpuOnly()).map(p -> OpenbTrace.request(p, smallest, host)).toList();
    }

    /** The GPU share of the cluster, thousandths of a GPU. */
    public static long capacityMilli(List<NodeInventory> nodes) {
        return 1000L * nodes.stream().mapToInt(n -> n.gpus().size()).sum();
    }

    static long gpuMilli(InstanceRequest r) {
        return (long) r.requestMilli() * r.gpus();
    }

    /**
     * The arrivals of the authors' evaluation: the requests sorted by name and shuffled with {@code seed}, then
     * requests drawn at random (with replacement, from the list in name order) and appended, each under a new
     * name, until the next draw's per-GPU share would take the arrived GPU share past {@code load} × capacity (the
     * authors' stopping test compares the share of one GPU); a list above that target loses requests drawn at
     * random instead.
     */
    public static List<InstanceRequest> arrivals(List<InstanceRequest> requests, long capacityMilli, double load,
            long seed) {
        return arrivals(requests, capacityMilli, load, new Random(seed));
    }

    private static List<InstanceRequest> arrivals(List<InstanceRequest> requests, long capacityMilli, double load,
            Random random) {
        List<InstanceRequest> byName = new ArrayList<>(requests);
        byName.sort(Comparator.comparing(InstanceRequest::id));
        List<InstanceRequest> out = new ArrayList<>(byName);
        java.util.Collections.shuffle(out, random);
        double target = load * capacityMilli;
        long arrived = requests.stream().mapToLong(OpenbSimulation::gpuMilli).sum();
        while (arrived > target && !out.isEmpty()) {
            arrived -= gpuMilli(out.remove(random.nextInt(out.size())));
        }
        for (int i = 0; !byName.isEmpty(); i++) {
            InstanceRequest r = byName.get(random.nextInt(byName.size()));
            if (arrived + r.requestMilli() > target) {
                break;
            }
            arrived += gpuMilli(r);
            String id = r.id() + "-tuned-" + i;
            out.add(r.withId(id, id));
        }
        return out;
    }

    /**
     * One seed's run: the arrivals, and the nodes in the order the authors' scheduler breaks ties in — sorted by
     * name, then renamed by a random permutation ({@code syncClusterResourceList}), so that the first node of a
     * tie is a random one, the same for every policy.
     */
    public record Run(List<InstanceRequest> arrivals, List<NodeInventory> nodes) {}

    public static Run prepare(List<InstanceRequest> requests, List<NodeInventory> nodes, double load, long seed) {
        Random random = new Random(seed);
        List<InstanceRequest> arrivals = arrivals(requests, capacityMilli(nodes), load, random);
        List<NodeInventory> order = new ArrayList<>(nodes);
        order.sort(Comparator.comparing(NodeInventory::name));
        java.util.Collections.shuffle(order, random);
        return new Run(arrivals, List.copyOf(order));
    }

    /** Places the arrivals in order, once each, skipping those that fit nowhere (no retries, no departures). */
    public static Allocation allocate(PlacementPolicy policy, List<NodeInventory> nodes, List<InstanceRequest> arrivals,
            double load) {
        long start = System.nanoTime();
        ClusterState state = new ClusterState(nodes);
        int totalGpus = state.totalGpus();
        int targetPercent = (int) Math.round(load * 100);
        long allocated = 0;
        long arrived = 0;
        int unplacedGpu = 0;
        int unplacedCpu = 0;
        // The allocated shares recorded at arrived shares that round to the target, and within one point of it.
        double atTarget = 0;
        int countAtTarget = 0;
        double nearTarget = 0;
        int countNearTarget = 0;
        for (InstanceRequest r : arrivals) {
            arrived += gpuMilli(r);
            if (policy.decide(state, r) instanceof PlacementDecision.Placed p) {
                state.apply(r, p);
                allocated += p.slots().stream().mapToLong(s -> s.requestMilli()).sum();
            } else if (r.cpuOnly()) {
                unplacedCpu++;
            } else {
                unplacedGpu++;
            }
            int arrivedPercent = round(arrived / (double) totalGpus / 10, 0).intValue();
            double allocatedPercent = round(allocated / (double) totalGpus / 10, 2).doubleValue();
            if (arrivedPercent == targetPercent) {
                atTarget += allocatedPercent;
                countAtTarget++;
            }
            if (Math.abs(arrivedPercent - targetPercent) <= 1) {
                nearTarget += allocatedPercent;
                countNearTarget++;
            }
        }
        double finalPercent = totalGpus == 0 ? 0 : 100.0 * allocated / (1000.0 * totalGpus);
        double percent = countAtTarget > 0 ? round(atTarget / countAtTarget, 2).doubleValue()
                : countNearTarget > 0 ? round(nearTarget / countNearTarget, 2).doubleValue() : finalPercent;
        return new Allocation(percent, finalPercent, unplacedGpu, unplacedCpu, state.activeGpuCount(),
                (System.nanoTime() - start) / 1e9);
    }

    /** Rounded as Python's {@code round} rounds a float: the exact binary value, halves to even. */
    static BigDecimal round(double value, int digits) {
        return new BigDecimal(value).setScale(digits, RoundingMode.HALF_EVEN);
    }
}
