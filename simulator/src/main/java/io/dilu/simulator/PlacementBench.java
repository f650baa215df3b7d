package io.dilu.simulator;

import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.StaticQuotaPlacement;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * Times Dilu's placement of the paper's 3,200-instance mix (cluster state built afresh each run, so the
 * time covers everything the scheduler does) and compares the GPUs it needs with the two baselines.
 * Reports the median of the measured runs after warm-up runs that let the JIT compile the hot path.
 */
public final class PlacementBench {

    private PlacementBench() {}

    public static void run(PrintStream out, int instances, long seed, int warmup, int runs) {
        List<SimInstance> mix = PaperMix.generate(instances, seed);
        List<NodeInventory> nodes = ClusterShape.PAPER.nodesFor(mix);
        List<InstanceRequest> requests = mix.stream().map(SimInstance::toRequest).toList();
        ComplementaryPlacement dilu = new ComplementaryPlacement();

        PlacementSimulation.Result result = null;
        for (int i = 0; i < warmup; i++) {
            result = PlacementSimulation.run(dilu, nodes, requests);
        }
        double[] seconds = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            result = PlacementSimulation.run(dilu, nodes, requests);
            seconds[i] = (System.nanoTime() - start) / 1e9;
        }
        Arrays.sort(seconds);
        PlacementSimulation.Result exclusive = PlacementSimulation.run(new ExclusivePlacement(), nodes, requests);
        PlacementSimulation.Result staticLimit = PlacementSimulation.run(new StaticQuotaPlacement(), nodes, requests);
        if (result.infeasible() + exclusive.infeasible() + staticLimit.infeasible() > 0) {
            throw new IllegalStateException("the simulated cluster was too small: some instances were not placed");
        }
        out.printf("placement of %d instances (seed %d) on %d nodes × %d GPUs, median of %d runs after %d warm-up:%n",
                instances, seed, nodes.size(), ClusterShape.PAPER.gpusPerNode(), runs, warmup);
        out.printf("  fastest %.4f s, median %.4f s, slowest %.4f s%n", seconds[0], seconds[runs / 2], seconds[runs - 1]);
        out.printf("  GPUs: dilu %d, exclusive %d (dilu/exclusive %.3f), static-limit %d (dilu/static %.3f)%n",
                result.gpus(), exclusive.gpus(), (double) result.gpus() / exclusive.gpus(), staticLimit.gpus(),
                (double) result.gpus() / staticLimit.gpus());
        out.printf("BENCH placement instances=%d seconds=%.4f gpus_dilu=%d gpus_exclusive=%d gpus_static_limit=%d%n",
                instances, seconds[runs / 2], result.gpus(), exclusive.gpus(), staticLimit.gpus());
    }
}
