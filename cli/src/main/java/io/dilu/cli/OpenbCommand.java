package io.dilu.cli;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.FragmentationGradientPlacement;
import io.dilu.core.placement.FragmentationGradientPlacement.Scoring;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeBestFitPlacement;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.placement.PlacementPolicy;
import io.dilu.core.placement.StaticQuotaPlacement;
import io.dilu.simulator.OpenbBench;
import io.dilu.simulator.OpenbSimulation;
import io.dilu.simulator.OpenbTrace;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** {@code ./dilu simulate --openb FILE [--nodes FILE] [--gpu-only]}: one pod list, every policy, Weng et al.'s metric. */
final class OpenbCommand {

    private OpenbCommand() {}

    static int simulate(PrintWriter out, PrintWriter err, Path podList, Path nodeList, boolean gpuOnly,
            PlacementParameters params) throws IOException {
        List<NodeInventory> nodes;
        List<OpenbTrace.Pod> pods;
        try {
            nodes = OpenbBench.readNodes(nodeList);
            try (Reader in = Files.newBufferedReader(podList, StandardCharsets.UTF_8)) {
                pods = OpenbTrace.readPods(in, podList.toString());
            }
        } catch (OpenbTrace.InvalidTraceException e) {
            err.println(e.getMessage());
            return 2;
        } catch (java.nio.file.NoSuchFileException e) {
            err.println(e.getMessage() + ": no such file");
            return 2;
        }
        boolean host = !gpuOnly && nodes.stream().allMatch(n -> n.cpuMilli() != NodeInventory.UNLIMITED);
        List<NodeInventory> cluster = host ? nodes : nodes.stream().map(NodeInventory::withoutHost).toList();
        List<InstanceRequest> requests = OpenbSimulation.requests(pods, cluster, host);
        if (requests.isEmpty()) {
            err.println(podList + ": no pod to place" + (host ? "" : " (GPUs only: the CPU-only pods are left out)"));
            return 2;
        }
        long capacity = OpenbSimulation.capacityMilli(cluster);
        OpenbSimulation.Run run = OpenbSimulation.prepare(requests, cluster, OpenbSimulation.LOAD, OpenbSimulation.FIRST_SEED);
        List<InstanceRequest> arrivals = run.arrivals();
        var classes = FragmentationGradientPlacement.workloadOf(requests, OpenbSimulation.FGD_COVERAGE);
        out.printf("Placing %s (%d pods, %d CPU-only) on %s (%d nodes, %d GPUs; %s) as Weng et al. load a cluster: the "
                + "list shuffled (seed %d), then resampled until %.0f%% of the GPU capacity has arrived (%d arrivals), "
                + "the nodes shuffled, each arrival placed once or skipped%n%n", podList, requests.size(),
                requests.stream().filter(InstanceRequest::cpuOnly).count(),
                nodeList == null ? OpenbBench.NODE_LIST : nodeList, nodes.size(), capacity / 1000,
                host ? "node CPU and memory modelled" : "GPUs only", OpenbSimulation.FIRST_SEED,
                OpenbSimulation.LOAD * 100, arrivals.size());
        out.printf("%-22s %12s %10s %9s %9s %8s%n", "policy", "alloc@130%", "alloc end", "GPU pods", "CPU pods", "GPUs");
        out.printf("%-22s %12s %10s %9s %9s %8s%n", "", "", "", "unplaced", "unplaced", "active");
        List<PlacementPolicy> policies = List.of(new ComplementaryPlacement(params),
                new FragmentationGradientPlacement(classes, Scoring.SIMULATOR), new FragmentationGradientPlacement(classes),
                new NodeBestFitPlacement(Scoring.SIMULATOR), new BestFitPlacement(), new ExclusivePlacement(),
                new StaticQuotaPlacement(params));
        for (PlacementPolicy policy : policies) {
            OpenbSimulation.Allocation a = OpenbSimulation.allocate(policy, run.nodes(), arrivals, OpenbSimulation.LOAD);
            out.printf("%-22s %11.2f%% %9.2f%% %9d %9d %8d%n", policy.name(), a.percent(), a.finalPercent(),
                    a.unplacedGpuPods(), a.unplacedCpuPods(), a.activeGpus());
        }
        return 0;
    }
}
