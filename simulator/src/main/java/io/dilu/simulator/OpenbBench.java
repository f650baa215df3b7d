package io.dilu.simulator;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.FragmentationGradientPlacement;
import io.dilu.core.placement.FragmentationGradientPlacement.Scoring;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeBestFitPlacement;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Two experiments per openb pod list ({@link OpenbTrace}).
 *
 * <p>GPUs needed: every GPU pod placed in creation order and without departures with Dilu (Algorithm 1),
 * Exclusive and plain best fit on SM request, reporting the GPUs each occupies once every pod is placed and, for
 * Dilu and best fit, the fragmentation then: free SM on active GPUs that no pod of the list could use (less than
 * its smallest SM request), as a share of the active GPUs' SM. The lists ask for up to 6,531 GPUs of the trace's
 * 6,212 (and Exclusive needs a GPU per pod), so the node list is repeated as often as it takes for every policy to
 * place every pod. GPUs only: CPU and memory are not modelled here.
 *
 * <p>Weng et al.'s own metric (USENIX ATC'23, the FGD paper), as their simulator measures it
 * ({@link OpenbSimulation}): on one copy of the node list, with every node's CPU and memory and every pod's,
 * CPU-only pods included (or, with {@code gpuOnly}, the GPU pods on GPUs alone), the GPU share allocated when 130%
 * of the cluster's has arrived, for Dilu, {@link FragmentationGradientPlacement} (the list's own task classes as its
 * target workload) scored as the authors' simulator scores it and scored exactly, the authors' best fit
 * ({@link NodeBestFitPlacement}, node-level over CPU and GPU, scored as their simulator does) and the tightest-GPU
 * best fit ({@link BestFitPlacement}); with several seeds, the mean over them.
 */
public final class OpenbBench {

    static final List<String> POD_LISTS = List.of("openb_pod_list_default.csv", "openb_pod_list_gpushare20.csv",
            "openb_pod_list_gpushare40.csv", "openb_pod_list_gpushare60.csv", "openb_pod_list_gpushare80.csv",
            "openb_pod_list_gpushare100.csv");
    public static final String NODE_LIST = "openb_node_list_gpu_node.csv";

    private OpenbBench() {}

    /**
     * What to run.
     *
     * @param traces pod lists to read; empty for the bundled ones
     * @param nodes the node list; null for the bundled one
     * @param gpuOnly leave CPU, memory and CPU-only pods out of Weng et al.'s metric
     * @param seeds how many shuffles (seeds 42, 43, …) to average
     * @param bundled which bundled lists to read when {@code traces} is empty
     */
    public record Options(List<Path> traces, Path nodes, boolean gpuOnly, int seeds, List<String> bundled) {
        public Options {
            traces = List.copyOf(traces);
            bundled = List.copyOf(bundled);
            if (seeds < 1 || seeds > 100) {
                throw new IllegalArgumentException("--seeds must be in 1..100, got " + seeds);
            }
            if (!POD_LISTS.containsAll(bundled)) {
                throw new IllegalArgumentException("bundled lists must be among " + POD_LISTS + ", got " + bundled);
            }
        }

        /** Every bundled list. */
        public Options(List<Path> traces, Path nodes, boolean gpuOnly, int seeds) {
            this(traces, nodes, gpuOnly, seeds, POD_LISTS);
        }

        public static final Options DEFAULTS = new Options(List.of(), null, false, 1);

        /** CI's smoke run: one bundled list (the default one), one seed. */
        public static final Options SMOKE = new Options(List.of(), null, false, 1, List.of(POD_LISTS.getFirst()));
    }

    /** What one policy left behind. */
    record Outcome(int gpus, int unplaced, double fragmentation) {}

    /** A named pod list. */
    private record PodList(String name, List<OpenbTrace.Pod> pods) {}

    public static void run(PrintStream out) throws IOException {
        run(out, Options.DEFAULTS);
    }

    public static void run(PrintStream out, Options options) throws IOException {
        List<NodeInventory> nodes = readNodes(options.nodes());
        List<PodList> lists = new ArrayList<>();
        if (options.traces().isEmpty()) {
            for (String name : options.bundled()) {
                try (Reader in = resource(name)) {
                    lists.add(new PodList(name, OpenbTrace.readPods(in, name)));
                }
            }
        } else {
            for (Path p : options.traces()) {
                try (Reader in = Files.newBufferedReader(p, StandardCharsets.UTF_8)) {
                    lists.add(new PodList(p.getFileName().toString(), OpenbTrace.readPods(in, p.toString())));
                }
            }
        }
        int totalGpus = nodes.stream().mapToInt(n -> n.gpus().size()).sum();
        boolean host = !options.gpuOnly() && nodes.stream().allMatch(n -> n.cpuMilli() != NodeInventory.UNLIMITED);
        out.printf("openb: %d nodes, %d GPUs (%s)%n", nodes.size(), totalGpus,
                options.nodes() == null ? NODE_LIST : options.nodes());
        for (PodList list : lists) {
            gpusNeeded(out, list, nodes);
            fgdMetric(out, list, nodes, host, options.seeds());
        }
    }

    private static void gpusNeeded(PrintStream out, PodList list, List<NodeInventory> nodes) {
        List<InstanceRequest> requests = OpenbSimulation.requests(list.pods(), nodes, false);
        int smallestShare = requests.stream().mapToInt(InstanceRequest::requestMilli).min().orElse(1000);
        List<NodeInventory> gpuNodes = nodes.stream().map(NodeInventory::withoutHost).toList();
        Outcome dilu = null;
        Outcome exclusive = null;
        Outcome bestFit = null;
        double diluSeconds = 0;
        int copies = 0;
        while (dilu == null || dilu.unplaced() + exclusive.unplaced() + bestFit.unplaced() > 0) {
            if (++copies > 8) {
                throw new IllegalStateException(list.name() + ": pods still unplaced on 8 copies of the cluster");
            }
            List<NodeInventory> cluster = repeated(gpuNodes, copies);
            long start = System.nanoTime();
            dilu = place(new ComplementaryPlacement(), cluster, requests, smallestShare);
            diluSeconds = (System.nanoTime() - start) / 1e9;
            exclusive = place(new ExclusivePlacement(), cluster, requests, smallestShare);
            bestFit = place(new BestFitPlacement(), cluster, requests, smallestShare);
        }
        out.printf("%n%s: %d GPU pods (%d fractional) in creation order on %d× the nodes, GPUs only; Dilu placed them in "
                + "%.3f s%n", list.name(), requests.size(), requests.stream().filter(r -> r.requestMilli() < 1000).count(),
                copies, diluSeconds);
        out.printf("  %-10s GPUs %5d  unplaced %4d  fragmentation %.4f%n", "dilu", dilu.gpus(), dilu.unplaced(), dilu.fragmentation());
        out.printf("  %-10s GPUs %5d  unplaced %4d%n", "exclusive", exclusive.gpus(), exclusive.unplaced());
        out.printf("  %-10s GPUs %5d  unplaced %4d  fragmentation %.4f%n", "bestfit", bestFit.gpus(), bestFit.unplaced(),
                bestFit.fragmentation());
        out.printf("BENCH openb trace=%s pods=%d gpus_dilu=%d gpus_exclusive=%d gpus_bestfit=%d frag_dilu=%.4f frag_bestfit=%.4f%n",
                list.name(), requests.size(), dilu.gpus(), exclusive.gpus(), bestFit.gpus(), dilu.fragmentation(),
                bestFit.fragmentation());
    }

    /** The policies measured on Weng et al.'s metric, in the order of the BENCH line. */
    static List<Named> fgdPolicies(List<InstanceRequest> requests) {
        List<FragmentationGradientPlacement.TaskClass> classes =
                FragmentationGradientPlacement.workloadOf(requests, OpenbSimulation.FGD_COVERAGE);
        return List.of(new Named("dilu", ComplementaryPlacement::new),
                new Named("fgd", () -> new FragmentationGradientPlacement(classes, Scoring.SIMULATOR)),
                new Named("bestfit", () -> new NodeBestFitPlacement(Scoring.SIMULATOR)),
                new Named("fgd_exact", () -> new FragmentationGradientPlacement(classes, Scoring.EXACT)),
                new Named("bestfit_gpu", BestFitPlacement::new));
    }

    /** A policy by the name the BENCH line gives it; a fresh one per run (FGD keeps caches). */
    record Named(String name, Supplier<PlacementPolicy> policy) {}

    private static void fgdMetric(PrintStream out, PodList list, List<NodeInventory> nodes, boolean host, int seeds) {
        List<NodeInventory> cluster = host ? nodes : nodes.stream().map(NodeInventory::withoutHost).toList();
        List<InstanceRequest> requests = OpenbSimulation.requests(list.pods(), cluster, host);
        List<Named> policies = fgdPolicies(requests);
        double[] percent = new double[policies.size()];
        double[] finalPercent = new double[policies.size()];
        double[] seconds = new double[policies.size()];
        int[] unplacedGpu = new int[policies.size()];
        int[] unplacedCpu = new int[policies.size()];
        int arrivals = 0;
        for (int s = 0; s < seeds; s++) {
            OpenbSimulation.Run run = OpenbSimulation.prepare(requests, cluster, OpenbSimulation.LOAD,
                    OpenbSimulation.FIRST_SEED + s);
            arrivals += run.arrivals().size();
            for (int i = 0; i < policies.size(); i++) {
                OpenbSimulation.Allocation a = OpenbSimulation.allocate(policies.get(i).policy().get(), run.nodes(),
                        run.arrivals(), OpenbSimulation.LOAD);
                percent[i] += a.percent() / seeds;
                finalPercent[i] += a.finalPercent() / seeds;
                seconds[i] += a.seconds();
                unplacedGpu[i] += a.unplacedGpuPods();
                unplacedCpu[i] += a.unplacedCpuPods();
            }
        }
        long cpuPods = requests.stream().filter(InstanceRequest::cpuOnly).count();
        out.printf("  Weng et al.'s metric on 1× the nodes, %s: %d pods (%d CPU-only), %d arrivals per seed on average "
                + "(the list shuffled, then resampled to %.0f%% of GPU capacity; the nodes shuffled), %d seed(s) from %d; "
                + "GPU share allocated at 130%% arrived (at the end) / GPU pods and CPU-only pods unplaced / seconds:%n",
                host ? "CPU and memory modelled" : "GPUs only", requests.size(), cpuPods, arrivals / seeds,
                OpenbSimulation.LOAD * 100, seeds, OpenbSimulation.FIRST_SEED);
        StringBuilder bench = new StringBuilder("BENCH openb-fgd list=" + list.name());
        for (int i = 0; i < policies.size(); i++) {
            out.printf("    %-12s %6.2f%% (%6.2f%%) / %5d / %5d / %5.1f%n", policies.get(i).name(), percent[i],
                    finalPercent[i], unplacedGpu[i], unplacedCpu[i], seconds[i]);
            bench.append(String.format(" alloc_%s=%.2f", policies.get(i).name(), percent[i]));
        }
        double gap = percent[0] - percent[1];
        out.printf("    dilu − fgd: %+.2f points (bar: at least −0.50): %s%n", gap, gap >= -0.5 ? "met" : "NOT met");
        bench.append(String.format(" dilu_minus_fgd=%.2f cpu=%s seeds=%d arrivals=%d", gap, host ? "modelled" : "no",
                seeds, arrivals / seeds));
        out.println(bench);
    }

    static Outcome place(PlacementPolicy policy, List<NodeInventory> nodes, List<InstanceRequest> requests,
            int smallestShare) {
        ClusterState state = new ClusterState(nodes);
        int unplaced = 0;
        for (InstanceRequest r : requests) {
            if (policy.decide(state, r) instanceof PlacementDecision.Placed p) {
                state.apply(r.id(), r.function(), p);
            } else {
                unplaced++;
            }
        }
        return new Outcome(state.activeGpuCount(), unplaced, fragmentation(state, smallestShare));
    }

    /** The trace's nodes, {@code copies} times, with names and GPU UUIDs kept unique. */
    static List<NodeInventory> repeated(List<NodeInventory> nodes, int copies) {
        List<NodeInventory> out = new ArrayList<>();
        for (int c = 0; c < copies; c++) {
            String suffix = c == 0 ? "" : "~" + c;
            for (NodeInventory n : nodes) {
                out.add(new NodeInventory(n.name() + suffix, n.gpus().stream().map(g -> new io.dilu.core.placement.GpuDevice(
                        g.uuid() + suffix, g.index(), g.model(), g.memoryMib(), g.smCount())).toList(), n.cpuMilli(),
                        n.memoryMib()));
            }
        }
        return out;
    }

    private static double fragmentation(ClusterState state, int smallestShare) {
        long unusable = 0;
        List<ClusterState.GpuUsage> active = state.activeUsage();
        for (ClusterState.GpuUsage u : active) {
            int free = Math.max(0, 1000 - u.requestMilli());
            if (free < smallestShare) {
                unusable += free;
            }
        }
        return active.isEmpty() ? 0 : unusable / (1000.0 * active.size());
    }

    /** The node list at {@code file}, or the bundled one when null. */
    public static List<NodeInventory> readNodes(Path file) throws IOException {
        if (file == null) {
            try (Reader in = resource(NODE_LIST)) {
                return OpenbTrace.readNodes(in, NODE_LIST);
            }
        }
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return OpenbTrace.readNodes(in, file.toString());
        }
    }

    static InputStreamReader resource(String name) throws IOException {
        InputStream in = OpenbBench.class.getResourceAsStream("/openb/" + name);
        if (in == null) {
            throw new IOException("trace file openb/" + name + " is not on the classpath");
        }
        return new InputStreamReader(in, StandardCharsets.UTF_8);
    }
}
