package io.dilu.e2e.bench;

import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.ClusterShape;
import io.dilu.simulator.coscaling.CoScalingFleet;
import io.dilu.simulator.coscaling.CoScalingPolicy;
import io.dilu.simulator.coscaling.CoScalingReport;
import io.dilu.simulator.coscaling.CoScalingSimulation;
import io.dilu.simulator.coscaling.DiluPolicy;
import io.dilu.simulator.coscaling.FleetFunctions;
import io.dilu.simulator.coscaling.FunctionProfile;
import io.dilu.simulator.coscaling.KpaPolicy;
import io.dilu.simulator.coscaling.RatePatterns;
import io.dilu.testing.KubeClients;
import io.dilu.trials.HostLateness;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./dilu bench coscaling-cluster}: the co-scaling experiment of the simulator, on the local cluster (2
 * nodes × 4 emulated GPUs), measured. Three inference functions (bursty, periodic and sporadic traffic, seeded)
 * and a best-effort training job share the GPUs; an open-loop load generator replays each function's trace over
 * HTTP to its ready pods and records every request's latency. Two runs on the same traces:
 * <ul>
 *   <li><b>dilu</b>: the shipped system — PodAutoscalers of class {@code co-scaling.dilu.io}, so the autoscaler
 *       in the cluster scrapes the pods' queue-proxy Stat endpoint and scales the Deployments, and the node
 *       agents' token managers scale each instance between its SM request and limit;</li>
 *   <li><b>kpa</b>: the baseline — the same cluster with static shares (limit = request) and the simulator's
 *       Knative KPA policy, driven by each second's arrivals (what Knative's activator and queue-proxies report),
 *       scaling the Deployments.</li>
 * </ul>
 * Reported per run: cold starts (pods started during the run; each measured from creation to Ready), the SLO
 * violation rate of the measured latencies, GPU-seconds booked (Σ over seconds of the SM requests of the pods
 * that exist); beside them, the simulator's prediction for Dilu on the same traces, profiles and measured cold
 * start and wake, on a pool of the cluster's shape ({@link #model}). Per function (pattern) too, in the BENCH line
 * as {@code <policy>_<key>_<function>}. Emulated GPUs: every figure is labelled so. Beside them, how late this machine woke a thread every 5 ms
 * while the traffic ran ({@link HostLateness}): past a token period at p99, the figures are the host's pace.
 *
 * <p>Usage: {@code CoScalingClusterBench REPO_ROOT [--seconds N] [--seed S] [--policies dilu,kpa] [--smoke]};
 * {@code --smoke}, for CI: the bursty function alone, 30 s of traffic a policy.
 */
public final class CoScalingClusterBench {

    /**
     * One function of the experiment: its traffic, its profile (what the emulated model serves at its SM request
     * and limit, from the emulator's model), and the emulated model's arguments.
     */
    record Function(String name, RateTrace trace, FunctionProfile profile, String model) {}

    /**
     * One function's measured run: pods started during it ({@code coldStarts}, of which {@code failedWakes} replaced a
     * parked pod whose wake its GPU refused), wakes answered and their time from the autoscaler's write seen to the
     * pod Ready, and per second the pods that exist, the SM share they book (a parked pod none) and the late requests.
     */
    record Measured(String function, int coldStarts, int failedWakes, double coldStartMeanS, int wakes, double wakeSeconds,
            double requests, double violations, double gpuSeconds, int[] instances, double[] share, double[] late) {

        double svr() {
            return requests == 0 ? 0 : violations / requests;
        }

        double wakeMeanS() {
            return wakes == 0 ? Double.NaN : wakeSeconds / wakes;
        }

        /** The books as measured: a parked pod books no SM, every pod its memory. */
        CoScalingSimulation.Books books(FunctionProfile profile) {
            return CoScalingSimulation.Books.measured(coldStarts - failedWakes, failedWakes, wakes, wakeSeconds, instances,
                    share, profile.requestShare(), profile.memoryMiB(), ClusterShape.PAPER.gpuMemoryMib());
        }
    }

    private CoScalingClusterBench() {}

    /** The cluster's nodes, each with the chart's emulated GPUs (4 A100-40GB, {@link ClusterShape#PAPER}). */
    static final int NODES = 2;

    /** The smoke run's traffic per policy: the whole machinery, deploy to report, in a few minutes with cluster up. */
    static final int SMOKE_SECONDS = 30;

    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]);
        int seconds = 600;
        long seed = 42;
        boolean smoke = false;
        List<String> policies = List.of("dilu", "kpa");
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--seconds" -> seconds = bounded("--seconds", args[++i], 60, 3600);
                case "--seed" -> seed = Long.parseLong(args[++i]);
                case "--policies" -> policies = List.of(args[++i].split(","));
                case "--smoke" -> smoke = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (--seconds N, --seed S, --policies dilu,kpa, --smoke)");
            }
        }
        if (!List.of("dilu", "kpa").containsAll(policies) || policies.isEmpty()) {
            throw new IllegalArgumentException("--policies=" + String.join(",", policies) + " is not allowed: dilu, kpa or both");
        }
        Path out = root.resolve("e2e/target/coscaling-cluster");
        Files.createDirectories(out);
        List<Function> functions = smoke ? functions(SMOKE_SECONDS, seed).subList(0, 1) : functions(seconds, seed);
        Path cluster = root.resolve("cluster/bin/dilu-cluster");
        Path dir = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
        run(cluster.toString(), "down");
        long origin = System.nanoTime();
        try (HostLateness host = HostLateness.start(origin)) {
            run(cluster.toString(), "up", "--nodes", Integer.toString(NODES));
            try (KubernetesClient client = KubeClients.fromKubeconfig(dir.resolve("admin.kubeconfig"))) {
                Map<String, Map<String, Measured>> runs = new LinkedHashMap<>();
                List<double[]> traffic = new ArrayList<>();
                for (String policy : policies) {
                    ClusterRun run = new ClusterRun(client, policy, functions, functions.getFirst().trace().seconds(), out);
                    runs.put(policy, run.call());
                    traffic.add(run.trafficSpan(origin));
                }
                report(functions, runs, out, host.over(s -> traffic.stream().anyMatch(t -> s >= t[0] && s < t[1])));
            } finally {
                run(cluster.toString(), "down");
            }
        }
    }

    /**
     * The three functions. Each serves batches of 2 requests; a batch is 10 kernels of 1,080 blocks of 100 µs,
     * which at a 20% share of an emulated A100's 108 SMs takes 50 ms (token-limited: 1,080 blocks a 5 ms period),
     * so 40 rps at the SM request, 80 at the 40% limit and 200 with the whole GPU. SLO 200 ms (4 × the batch
     * time, as the simulator's mid-size model). The rates are those of {@code ./dilu bench coscaling} scaled by
     * 40/50, the ratio of this model's rate at its request to the mid-size model's.
     */
    static List<Function> functions(int seconds, long seed) {
        String model = "--batch 2 --max-wait-ms 5 --kernels 10 --blocks 1080 --block-us 100";
        return List.of(
                new Function("bursty", RatePatterns.bursty(seconds, 24, seed), profile("bursty"), model),
                new Function("periodic", RatePatterns.periodic(seconds, 48, seed + 1), profile("periodic"), model),
                new Function("sporadic", RatePatterns.sporadic(seconds, 32, seed + 2), profile("sporadic"), model));
    }

    /** Each function's pods hold 2 GiB of GPU memory (the emulated model's weights and context, as deployed). */
    static FunctionProfile profile(String name) {
        return new FunctionProfile(name, 0.2, 0.05, 40, 80, 0.2, 0.4, 200, 8, 2048);
    }

    static int bounded(String option, String text, int min, int max) {
        try {
            int v = Integer.parseInt(text);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + "=" + text + " is not allowed: must be an integer in " + min + ".." + max);
    }

    static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed");
        }
    }

    /**
     * The model of a run on this cluster: the functions on one pool of its shape (2 nodes × 4 A100-40GB, as emulated)
     * with the training job placed first, each function's first instance ready when its traffic begins, every
     * instance placed by Algorithm 1 ({@link CoScalingFleet}), so that a parked instance's GPU can fill while it is
     * parked as on the cluster; the cold start and wake as measured. The autoscaler runs as the local cluster installs
     * it, in the chart's default mode (alongside Knative's: never below one).
     */
    static Map<String, CoScalingSimulation.Result> model(List<Function> functions, String policy,
            java.util.function.Function<FunctionProfile, CoScalingPolicy> factory, double coldStart, double wake) {
        List<FleetFunctions.Function> fleet = new ArrayList<>();
        for (Function f : functions) {
            fleet.add(new FleetFunctions.Function(f.name(), FleetFunctions.Kind.INFERENCE,
                    f.profile().withColdStart((int) Math.round(coldStart)), false, f.trace()));
        }
        InstanceRequest training = new InstanceRequest("train", "train", 1, ClusterRun.TRAINING_SM * 10,
                PodQuotaAnnotations.smLimit(Map.of(), ClusterRun.TRAINING_SM) * 10, ClusterRun.TRAINING_MEMORY_MIB, false);
        return CoScalingFleet.run(fleet, policy, factory, ClusterShape.PAPER.nodes(NODES),
                new CoScalingFleet.Start(List.of(training), 1, wake)).functions();
    }

    /**
     * Prints each run's figures per function and in all, the simulator's prediction for the same traces and
     * profiles (with the cold start measured in the Dilu run), the BENCH line, and writes the series as CSV.
     */
    static void report(List<Function> functions, Map<String, Map<String, Measured>> runs, Path out, HostLateness.Window host)
            throws Exception {
        Files.createDirectories(out);
        // The cold start this cluster showed (the simulator's input): the mean over the runs' new pods.
        double coldStart = runs.values().stream().flatMap(r -> r.values().stream()).mapToDouble(Measured::coldStartMeanS)
                .filter(d -> !Double.isNaN(d)).average().orElse(functions.getFirst().profile().coldStartSeconds());
        // The wake this cluster showed, where the Dilu run woke a parked pod; the model's own figure where it did not.
        int wakes = runs.values().stream().flatMap(r -> r.values().stream()).mapToInt(Measured::wakes).sum();
        double wake = wakes == 0 ? CoScalingSimulation.WAKE_SECONDS
                : runs.values().stream().flatMap(r -> r.values().stream()).mapToDouble(Measured::wakeSeconds).sum() / wakes;
        Map<String, CoScalingSimulation.Result> sim = model(functions, "dilu", DiluPolicy::alongside, coldStart, wake);
        Map<String, CoScalingSimulation.Result> simKpa = model(functions, "kpa", KpaPolicy::kpa, coldStart, wake);
        System.out.printf(Locale.ROOT, "%nco-scaling on the local cluster (emulated GPUs), %d s per run; SLO %.0f ms%n",
                functions.getFirst().trace().seconds(), functions.getFirst().profile().sloSeconds() * 1000);
        Map<String, double[]> totals = new LinkedHashMap<>();
        Map<String, CoScalingSimulation.Books> books = new LinkedHashMap<>();
        for (var run : runs.entrySet()) {
            double cold = 0;
            double requests = 0;
            double violations = 0;
            double gpuS = 0;
            CoScalingSimulation.Books sum = new CoScalingSimulation.Books(0, 0, 0, 0, 0, 0);
            for (Function f : functions) {
                Measured m = run.getValue().get(f.name());
                CoScalingSimulation.Books b = m.books(f.profile());
                System.out.printf(Locale.ROOT, "  %-5s %-9s cold starts %3d (mean %.1f s; %d after a failed wake)  wakes %3d "
                        + "(mean %.2f s)  requests %6.0f  SVR %6.2f%%  SM GPU-s booked %7.1f  memory GiB-s %7.0f  dominant "
                        + "GPU-s %7.1f  pods peak %d%n", run.getKey(), m.function(), m.coldStarts(), m.coldStartMeanS(),
                        m.failedWakes(), m.wakes(), m.wakeMeanS(), m.requests(), 100 * m.svr(), m.gpuSeconds(),
                        b.memoryGibSeconds(), b.dominantGpuSeconds(), Arrays.stream(m.instances()).max().orElse(0));
                cold += m.coldStarts();
                requests += m.requests();
                violations += m.violations();
                gpuS += m.gpuSeconds();
                sum = new CoScalingSimulation.Books(sum.scaleOutColdStarts() + b.scaleOutColdStarts(),
                        sum.failedWakeColdStarts() + b.failedWakeColdStarts(), sum.wakes() + b.wakes(),
                        sum.wakeSeconds() + b.wakeSeconds(), sum.memoryGibSeconds() + b.memoryGibSeconds(),
                        sum.dominantGpuSeconds() + b.dominantGpuSeconds());
            }
            totals.put(run.getKey(), new double[] {cold, requests == 0 ? 0 : violations / requests, gpuS});
            books.put(run.getKey(), sum);
        }
        double simRequests = sim.values().stream().mapToDouble(CoScalingSimulation.Result::requests).sum();
        double simSvr = sim.values().stream().mapToDouble(CoScalingSimulation.Result::violations).sum() / simRequests;
        double simKpaSvr = simKpa.values().stream().mapToDouble(CoScalingSimulation.Result::violations).sum() / simRequests;
        sim.forEach((name, r) -> System.out.printf(Locale.ROOT, "  model dilu %-9s cold starts %3d  wakes %3d  SVR %6.2f%%  "
                + "GPU-s %7.1f (the simulator, cold start %.0f s and wake %.2f s as measured)%n", name, r.coldStarts(),
                r.books().wakes(), 100 * r.violationRate(), r.gpuSeconds(), coldStart, wake));
        try (var w = Files.newBufferedWriter(out.resolve("series.csv"))) {
            w.write("run,function,second,rps,instances,gpu_share,late\n");
            for (var run : runs.entrySet()) {
                for (Function f : functions) {
                    Measured m = run.getValue().get(f.name());
                    for (int t = 0; t < m.instances().length; t++) {
                        w.write(String.format(Locale.ROOT, "%s,%s,%d,%s,%d,%.3f,%.0f%n", run.getKey(), f.name(), t,
                                f.trace().rate(t), m.instances()[t], m.share()[t], m.late()[t]));
                    }
                }
            }
        }
        System.out.println("series: " + out.resolve("series.csv"));
        // The figures: per function, each run as measured and the model's Dilu beside them.
        List<CoScalingReport.TraceRuns> figures = new ArrayList<>();
        for (Function f : functions) {
            List<CoScalingSimulation.Result> lines = new ArrayList<>();
            for (var run : runs.entrySet()) {
                Measured m = run.getValue().get(f.name());
                lines.add(new CoScalingSimulation.Result(run.getKey() + " (measured)", m.coldStarts(), m.requests(),
                        m.violations(), m.gpuSeconds(), m.instances(), m.share(), m.late(), m.books(f.profile())));
            }
            CoScalingSimulation.Result model = sim.get(f.name());
            lines.add(new CoScalingSimulation.Result("dilu (model)", model.coldStarts(), model.requests(), model.violations(),
                    model.gpuSeconds(), model.instances(), model.share(), model.late(), model.books()));
            figures.add(new CoScalingReport.TraceRuns(f.trace(), lines));
        }
        CoScalingReport.write(out, functions.getFirst().profile(), figures, new CoScalingReport.Provenance(
                "measured on the local cluster, emulated GPUs; GPU share booked",
                "**Measured on the local cluster, on emulated GPUs** (`./dilu bench coscaling-cluster`): latencies from the "
                        + "load generator, pods from the API server; a measured run's GPU share is what its pods book (their SM "
                        + "requests), not a GPU measurement. `dilu (model)` is the simulator's prediction for the same traces "
                        + "(docs/coscaling.md); its GPU share is what its instances hold, vertical scaling included."));
        System.out.println("figures and report: " + out.resolve("report.md"));
        System.out.println("host: a thread of the bench waking every 5 ms on absolute deadlines, as the token loops do, came "
                + host.describe() + " while the traffic ran");
        if (host.overloaded()) {
            System.out.printf(Locale.ROOT, "the HOST WAS OVERLOADED (p99 %.1f ms late, beyond one %.0f ms token period): the"
                    + " figures above are this machine's pace, for both policies, not a measure of either%n", host.p99Ms(),
                    HostLateness.OVERLOADED_P99_MS);
        }
        if (!totals.containsKey("dilu") || !totals.containsKey("kpa")) {
            System.out.println("(one policy run: no BENCH line, which compares both)");
            return;
        }
        StringBuilder bench = new StringBuilder(String.format(Locale.ROOT, "BENCH coscaling-cluster gpu=emulated seconds=%d",
                functions.getFirst().trace().seconds()));
        for (String policy : List.of("dilu", "kpa")) {
            double[] t = totals.get(policy);
            CoScalingSimulation.Books b = books.get(policy);
            bench.append(String.format(Locale.ROOT, " %1$s_cold_starts=%2$.0f %1$s_svr=%3$.2f %1$s_gpu_s=%4$.1f"
                    + " %1$s_scale_out_cold_starts=%5$d %1$s_failed_wake_cold_starts=%6$d %1$s_wakes=%7$d %1$s_wake_s=%8$.2f"
                    + " %1$s_mem_gib_s=%9$.0f %1$s_drf_gpu_s=%10$.1f", policy, t[0], 100 * t[1], t[2], b.scaleOutColdStarts(),
                    b.failedWakeColdStarts(), b.wakes(), b.meanWakeSeconds(), b.memoryGibSeconds(),
                    b.dominantGpuSeconds()));
        }
        bench.append(String.format(Locale.ROOT, " sim_dilu_svr=%.2f sim_kpa_svr=%.2f cold_start_s=%.1f wake_s=%.2f"
                + " host_late_p99_ms=%.2f", 100 * simSvr, 100 * simKpaSvr, coldStart, wake, host.p99Ms()));
        for (Function f : functions) {
            for (String policy : List.of("dilu", "kpa")) {
                Measured m = runs.get(policy).get(f.name());
                bench.append(String.format(Locale.ROOT, " %1$s_cold_starts_%2$s=%3$d %1$s_svr_%2$s=%4$.2f %1$s_gpu_s_%2$s=%5$.1f",
                        policy, f.name(), m.coldStarts(), 100 * m.svr(), m.gpuSeconds()));
            }
            bench.append(String.format(Locale.ROOT, " sim_dilu_svr_%s=%.2f", f.name(), 100 * sim.get(f.name()).violationRate()));
        }
        System.out.println(bench);
    }
}
