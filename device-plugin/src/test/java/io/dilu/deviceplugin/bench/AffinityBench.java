package io.dilu.deviceplugin.bench;

import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.deviceplugin.bench.ColocationBench.Inference;
import io.dilu.deviceplugin.bench.ColocationBench.Training;
import io.dilu.deviceplugin.bench.ColocationBench.Workload;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Workload affinity, measured (issue 14): two inference functions of two replicas each (one steady, one
 * bursty) and a two-worker training job on a node of 4 emulated GPUs, under Dilu's token manager at the node
 * agent's shipped defaults, placed two ways:
 * <ul>
 *   <li><b>stacked</b>: what this project's first affinity did for these arrivals (the job, then the steady
 *       function's replicas, then the bursty one's): each function's replicas on one GPU, so one worker sits
 *       beside both steady replicas and the other beside both bursty ones;</li>
 *   <li><b>paper</b>: {@link ComplementaryPlacement} as it is now (§3.3, Principle 1): each function's second
 *       replica follows the job to its other worker, so both workers have the same neighbours.</li>
 * </ul>
 * A function's requests are one Gamma arrival process sent to its replicas in turn (round robin, as a
 * load balancer would), so a burst reaches both replicas at once. Inference: the worse replica's p95 of each
 * function, then the worse function. Training: the job's iteration time is its slowest worker's mean
 * iteration (the workers are not synchronised here, so this is the barrel effect's lower bound). Every figure
 * is from the emulated GPU. How late the host ran each layout is the lateness of its token loop's 5 ms periods; the
 * BENCH line carries the worse layout's.
 *
 * <p>Usage: {@code AffinityBench NATIVE_BUILD_DIR [SECONDS | --smoke]}: 20 s per layout by default,
 * {@value #SMOKE_SECONDS} s with {@code --smoke}.
 */
public final class AffinityBench {

    static final String USAGE = "AffinityBench NATIVE_BUILD_DIR [SECONDS | --smoke]";
    static final int SMOKE_SECONDS = 2;
    private static final int GPUS = 4;
    private static final Inference STEADY = new Inference("steady", 0.20, 0.40, 100, 1, 8, 4, 20, 108, 100);
    private static final Inference BURSTY = new Inference("bursty", 0.20, 0.40, 100, 4, 8, 4, 10, 216, 100);
    private static final Training WORKER = new Training("train", 0.40, 0.70, 8, 432, 100, 3);

    /** An instance placed on a GPU: a replica of an inference function or one worker of the job. */
    record Placed(String name, Workload workload, int gpu, int replica) {}

    /** What one layout measured. */
    record Outcome(double worstP95Ms, double iterationMs, Map<String, Double> p95ByFunction, Map<String, Double> iterByWorker,
            Lateness host) {}

    private final Path nativeDir;
    private final int seconds;
    private final Path work;

    AffinityBench(Path nativeDir, int seconds) throws Exception {
        this.nativeDir = nativeDir;
        this.seconds = seconds;
        this.work = Files.createTempDirectory("dilu-affinity-");
    }

    /** The first version's layout for these arrivals: each function's replicas together. */
    static List<Placed> stacked() {
        return List.of(new Placed("train-0", WORKER, 0, 0), new Placed("train-1", WORKER, 1, 1),
                new Placed("steady-0", STEADY, 0, 0), new Placed("steady-1", STEADY, 0, 1),
                new Placed("bursty-0", BURSTY, 1, 0), new Placed("bursty-1", BURSTY, 1, 1));
    }

    /** Today's {@link ComplementaryPlacement} for the same arrivals, on one node of 4 emulated A100s. */
    static List<Placed> paper() {
        NodeInventory node = NodeInventory.uniform("node", GPUS, "A100-40GB", 40_960, 108);
        Map<String, Integer> index = new LinkedHashMap<>();
        node.gpus().forEach(g -> index.put(g.uuid(), g.index()));
        ClusterState state = new ClusterState(List.of(node));
        ComplementaryPlacement dilu = new ComplementaryPlacement();
        List<Placed> placed = new ArrayList<>();
        PlacementDecision.Placed job = place(state, dilu, new InstanceRequest("train", "train", 2, milli(WORKER.request()),
                milli(WORKER.limit()), 8192, false));
        for (int w = 0; w < 2; w++) {
            placed.add(new Placed("train-" + w, WORKER, index.get(job.slots().get(w).gpuUuid()), w));
        }
        for (Inference f : List.of(STEADY, BURSTY)) {
            for (int r = 0; r < 2; r++) {
                PlacementDecision.Placed p = place(state, dilu, new InstanceRequest(f.name() + "-" + r, f.name(), 1,
                        milli(f.request()), milli(f.limit()), 4096, false));
                placed.add(new Placed(f.name() + "-" + r, f, index.get(p.slots().getFirst().gpuUuid()), r));
            }
        }
        return placed;
    }

    private static PlacementDecision.Placed place(ClusterState state, ComplementaryPlacement policy, InstanceRequest req) {
        if (!(policy.decide(state, req) instanceof PlacementDecision.Placed p)) {
            throw new IllegalStateException(req.id() + " was not placed");
        }
        state.apply(req.id(), req.function(), p);
        return p;
    }

    private static int milli(double share) {
        return (int) Math.round(share * 1000);
    }


    Outcome run(String label, List<Placed> layout) throws Exception {
        Path dir = Files.createDirectories(work.resolve(label));
        TokenManager manager = new TokenManager(GPUS, ColocationBench.shippedParameters(),
                ColocationBench.shippedRefillSteps(), InstantSource.system(), Lateness.samplesFor(seconds));
        List<Process> processes = new ArrayList<>();
        Lateness host;
        try {
            for (Placed p : layout) {
                ControlBlock block = ControlBlock.create(dir.resolve("control-" + p.name()), 1);
                block.setMemoryLimit(0, 1024L << 20);
                block.heartbeat(System.nanoTime());
                Workload w = p.workload();
                manager.gpu(p.gpu()).add(new Tenant(p.name(), block, 0, w.request(), w.limit(), w.slo()));
            }
            manager.start();
            for (Placed p : layout) {
                Path arrivals = p.workload() instanceof Inference f ? replicaArrivals(dir, f, p.replica()) : null;
                ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(nativeDir, dir.resolve("control-" + p.name()),
                        ColocationBench.command(nativeDir, seconds, p.workload(), arrivals)))
                        .redirectOutput(dir.resolve(p.name() + ".out").toFile())
                        .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("stderr.log").toFile()));
                pb.environment().put("DILU_EMU_DIR", Files.createDirectories(dir.resolve("gpu-" + p.gpu())).toString());
                processes.add(pb.start());
            }
            for (Process process : processes) {
                if (!process.waitFor(seconds + 120L, TimeUnit.SECONDS) || process.exitValue() != 0) {
                    throw new IllegalStateException(label + ": a workload failed or did not finish, see " + dir.resolve("stderr.log"));
                }
            }
            host = Lateness.of(manager.sortedLateness());
        } finally {
            processes.forEach(Process::destroyForcibly);
            manager.close();
        }
        Map<String, Double> p95 = new LinkedHashMap<>();
        Map<String, Double> iter = new LinkedHashMap<>();
        for (Placed p : layout) {
            String out = Files.readString(dir.resolve(p.name() + ".out"), StandardCharsets.UTF_8);
            if (p.workload() instanceof Inference f) {
                p95.merge(f.name(), ColocationBench.number(out, "p95_ms"), Math::max);
            } else {
                iter.put(p.name(), ColocationBench.number(out, "iter_ms_mean"));
            }
        }
        double worst = p95.values().stream().mapToDouble(Double::doubleValue).max().orElseThrow();
        double slowest = iter.values().stream().mapToDouble(Double::doubleValue).max().orElseThrow();
        return new Outcome(worst, slowest, p95, iter, host);
    }

    /** Every other request of the function's one arrival process (round robin over its two replicas). */
    private Path replicaArrivals(Path dir, Inference f, int replica) throws Exception {
        List<Double> all = ColocationBench.arrivalTimes(f, seconds, f.name().hashCode());
        StringBuilder lines = new StringBuilder();
        for (int i = replica; i < all.size(); i += 2) {
            lines.append(String.format(Locale.ROOT, "%.6f%n", all.get(i)));
        }
        return Files.writeString(dir.resolve(f.name() + "-" + replica + "-arrivals.txt"), lines);
    }

    private static String describe(List<Placed> layout) {
        Map<Integer, List<String>> byGpu = new TreeMap<>();
        layout.forEach(p -> byGpu.computeIfAbsent(p.gpu(), g -> new ArrayList<>()).add(p.name()));
        return byGpu.toString();
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(USAGE, args);
        if (parsed.positional().isEmpty() || parsed.positional().size() > 2) {
            System.err.println("usage: " + USAGE);
            System.exit(2);
        }
        int seconds = parsed.seconds(1, 20, SMOKE_SECONDS);
        AffinityBench bench = new AffinityBench(Path.of(parsed.positional().getFirst()), seconds);
        System.out.printf(Locale.ROOT, "EMULATED GPUs (4 × 108 SMs), %d s per layout, node agent defaults%n", seconds);
        Map<String, List<Placed>> layouts = new LinkedHashMap<>();
        layouts.put("stacked", stacked());
        layouts.put("paper", paper());
        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        for (var layout : layouts.entrySet()) {
            Outcome o = bench.run(layout.getKey(), layout.getValue());
            outcomes.put(layout.getKey(), o);
            System.out.printf(Locale.ROOT, "  %-8s GPUs %s: p95 ms %s, iteration ms %s; host late p99 %.3f ms, max %.3f ms%n",
                    layout.getKey(), describe(layout.getValue()), o.p95ByFunction(), o.iterByWorker(), o.host().p99Ms(),
                    o.host().maxMs());
        }
        Outcome stacked = outcomes.get("stacked");
        Outcome paper = outcomes.get("paper");
        System.out.printf(Locale.ROOT, "BENCH affinity gpu=emulated seconds=%d stacked_p95_ms=%.2f paper_p95_ms=%.2f "
                + "stacked_train_iter_ms=%.2f paper_train_iter_ms=%.2f %s%n", seconds, stacked.worstP95Ms(), paper.worstP95Ms(),
                stacked.iterationMs(), paper.iterationMs(), Lateness.worst(List.of(stacked.host(), paper.host())).hostKeys());
    }
}
