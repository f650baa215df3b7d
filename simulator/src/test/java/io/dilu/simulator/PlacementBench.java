package io.dilu.simulator;

import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.StaticQuotaPlacement;
import io.dilu.simulator.bench.PreAffinityPlacement;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Times Dilu's placement of the paper's 3,200-instance mix (cluster state built afresh each run, so the
 * time covers everything the scheduler does) and compares the GPUs it needs with the two baselines.
 * Reports the median of the measured runs after warm-up runs that let the JIT compile the hot path.
 *
 * <p>The same run times the search as it was before the paper's workload affinity (commit 72b749d;
 * {@link PreAffinityPlacement}, a faithful copy), alternating the two so that both see the same machine, and
 * fails when today's median is more than {@link #RATIO_BAR} times the previous one's: a slowdown is caught by
 * the ratio, whatever the machine's speed.
 *
 * <p>With its tests rather than among the simulator's sources: the copy it times against is frozen, no model, and
 * stays out of what the simulator ships.
 */
@Command(name = "dilu bench placement", mixinStandardHelpOptions = true,
        description = {"Time Dilu's placement of the paper's mix; compare GPUs with Exclusive and static-limit.",
                "Times the search as it was before the paper's workload affinity (72b749d) in the same run and "
                        + "exits 1 when today's is more than " + PlacementBench.RATIO_BAR + "× slower."})
public final class PlacementBench implements Callable<Integer> {

    /** Most today's search may take, as a multiple of the pre-affinity search's time in the same run. */
    public static final double RATIO_BAR = 1.5;

    @Option(names = "--instances", defaultValue = "3200") int instances;
    @Option(names = "--seed", defaultValue = "20250330") long seed;
    @Option(names = "--warmup", defaultValue = "30") int warmup;
    @Option(names = "--runs", defaultValue = "31") int runs;
    @Option(names = "--smoke", description = "CI's size: 3 warm-up and 5 measured runs; the ratio is printed, "
            + "not judged") boolean smoke;

    /** {@code ./dilu bench placement}. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new PlacementBench()).execute(args));
    }

    @Override
    public Integer call() {
        return smoke ? run(System.out, instances, seed, 3, 5, false) : run(System.out, instances, seed, warmup, runs, true);
    }

    /** Whether today's search, at {@code ratio} × the previous one's time, fails the bench. */
    static boolean tooSlow(double ratio) {
        return ratio > RATIO_BAR;
    }

    /**
     * Returns 0, or 1 when {@code judge} and today's search is slower than {@link #RATIO_BAR} × the previous one (a
     * smoke run, too short to judge a timing on a busy machine, prints the ratio and does not judge it).
     */
    public static int run(PrintStream out, int instances, long seed, int warmup, int runs, boolean judge) {
        List<SimInstance> mix = PaperMix.generate(instances, seed);
        List<NodeInventory> nodes = ClusterShape.PAPER.nodesFor(mix);
        List<InstanceRequest> requests = mix.stream().map(SimInstance::toRequest).toList();
        ComplementaryPlacement dilu = new ComplementaryPlacement();

        PlacementSimulation.Result result = null;
        PreAffinityPlacement.Result previous = null;
        for (int i = 0; i < warmup; i++) {
            result = PlacementSimulation.run(dilu, nodes, requests);
            previous = PreAffinityPlacement.place(nodes, requests);
        }
        double[] seconds = new double[runs];
        double[] previousSeconds = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            result = PlacementSimulation.run(dilu, nodes, requests);
            long middle = System.nanoTime();
            previous = PreAffinityPlacement.place(nodes, requests);
            previousSeconds[i] = (System.nanoTime() - middle) / 1e9;
            seconds[i] = (middle - start) / 1e9;
        }
        Arrays.sort(seconds);
        Arrays.sort(previousSeconds);
        PlacementSimulation.Result exclusive = PlacementSimulation.run(new ExclusivePlacement(), nodes, requests);
        PlacementSimulation.Result staticLimit = PlacementSimulation.run(new StaticQuotaPlacement(), nodes, requests);
        if (result.infeasible() + exclusive.infeasible() + staticLimit.infeasible() + previous.infeasible() > 0) {
            throw new IllegalStateException("the simulated cluster was too small: some instances were not placed");
        }
        double median = seconds[runs / 2];
        double previousMedian = previousSeconds[runs / 2];
        double ratio = median / previousMedian;
        out.printf("placement of %d instances (seed %d) on %d nodes × %d GPUs, median of %d runs after %d warm-up:%n",
                instances, seed, nodes.size(), ClusterShape.PAPER.gpusPerNode(), runs, warmup);
        out.printf("  today's search:                  fastest %.4f s, median %.4f s, slowest %.4f s%n", seconds[0],
                median, seconds[runs - 1]);
        out.printf("  before the affinity (72b749d^):  fastest %.4f s, median %.4f s, slowest %.4f s (%d GPUs)%n",
                previousSeconds[0], previousMedian, previousSeconds[runs - 1], previous.gpus());
        out.printf("  today / before: %.2f (bar: at most %.2f%s)%n", ratio, RATIO_BAR, judge ? "" : "; not judged in a smoke run");
        out.printf("  GPUs: dilu %d, exclusive %d (dilu/exclusive %.3f), static-limit %d (dilu/static %.3f)%n",
                result.gpus(), exclusive.gpus(), (double) result.gpus() / exclusive.gpus(), staticLimit.gpus(),
                (double) result.gpus() / staticLimit.gpus());
        boolean slow = judge && tooSlow(ratio);
        if (slow) {
            out.printf("FAIL: today's search takes %.2f× the pre-affinity search's time in this run, more than the %.2f× "
                    + "allowed%n", ratio, RATIO_BAR);
        }
        out.printf("BENCH placement instances=%d seconds=%.4f seconds_previous=%.4f ratio=%.2f ratio_bar=%.2f gpus_dilu=%d "
                + "gpus_previous=%d gpus_exclusive=%d gpus_static_limit=%d%n", instances, median, previousMedian, ratio,
                RATIO_BAR, result.gpus(), previous.gpus(), exclusive.gpus(), staticLimit.gpus());
        return slow ? 1 : 0;
    }
}
