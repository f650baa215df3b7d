package io.dilu.deviceplugin.bench;

import io.dilu.core.placement.Apportion;
import io.dilu.deviceplugin.bench.ColocationBench.Inference;
import io.dilu.deviceplugin.bench.ColocationBench.Training;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A model split into two pipeline stages (issue 14): should each stage get the model's whole SM request on
 * its GPU, as Dilu's public code does, or a share in proportion to the layers it holds, as this project's
 * placement books it? On the emulated GPU, at the node agent's shipped defaults, each stage beside a
 * best-effort training worker on its own GPU:
 * <ul>
 *   <li><b>proportional</b>: the stages hold 12 and 8 of the model's 20 kernels and get 12% / 25% and 8% / 15%
 *       (request / limit) — the model's 20% / 40% apportioned as the extender does;</li>
 *   <li><b>full</b>: both stages get 20% / 40%, which books twice the model's request;</li>
 *   <li><b>unsplit</b>, for reference: the whole model on one GPU at 20% / 40%.</li>
 * </ul>
 * Stage 1 serves the request arrivals, batching as the model does; stage 2 then serves stage 1's departures
 * without waiting to batch (a second run on the other GPU, so stage 2 sees exactly the stream stage 1
 * produced). A request's latency is the sum of its two stage
 * latencies; the neighbours' training rate is the cost to the GPUs' other tenants. Every figure is emulated. How
 * late the host ran each stage's run is the lateness of its token loop's 5 ms periods; the BENCH line carries the
 * worst run's.
 *
 * <p>Usage: {@code SplitBench NATIVE_BUILD_DIR [SECONDS | --smoke]}: 20 s of arrivals by default,
 * {@value #SMOKE_SECONDS} s with {@code --smoke}.
 */
public final class SplitBench {

    static final String USAGE = "SplitBench NATIVE_BUILD_DIR [SECONDS | --smoke]";
    static final int SMOKE_SECONDS = 2;
    private static final int KERNELS = 20;
    private static final int[] STAGE_KERNELS = {12, 8};
    private static final Inference MODEL = new Inference("llm", 0.20, 0.40, 80, 2, 4, 4, KERNELS, 108, 100);
    private static final Training NEIGHBOUR = new Training("train", 0.40, 0.70, 8, 432, 100, 3);

    /** One stage's run: per-request latency (ms, in request order) and its neighbour's blocks per second. */
    record StageRun(double[] latencyMs, double neighbourRate) {}

    private final Path nativeDir;
    private final int seconds;
    private final Path work;
    /** How late the host ran each stage's run, in order. */
    private final List<Lateness> hostLateness = new ArrayList<>();

    SplitBench(Path nativeDir, int seconds) throws Exception {
        this.nativeDir = nativeDir;
        this.seconds = seconds;
        this.work = Files.createTempDirectory("dilu-split-");
    }

    /**
     * Runs {@code kernels} of the model at request / limit beside the neighbour on a GPU of its own, batching
     * for at most {@code maxWaitMs} (0 for a later stage: it runs what the stage before handed over).
     */
    StageRun stage(String label, int kernels, double request, double limit, double maxWaitMs, List<Double> arrivals)
            throws Exception {
        Path dir = Files.createDirectories(work.resolve(label));
        Path arrivalFile = dir.resolve("arrivals.txt");
        StringBuilder lines = new StringBuilder();
        arrivals.forEach(t -> lines.append(String.format(Locale.ROOT, "%.6f%n", t)));
        Files.writeString(arrivalFile, lines);
        Path latencies = dir.resolve("latencies.txt");
        int trainSeconds = (int) Math.ceil(arrivals.getLast()) + 1;
        TokenManager manager = new TokenManager(1, ColocationBench.shippedParameters(),
                ColocationBench.shippedRefillSteps(), InstantSource.system(), Lateness.samplesFor(trainSeconds));
        List<Process> processes = new ArrayList<>();
        Lateness host;
        try {
            for (String tenant : List.of("stage", "train")) {
                ControlBlock block = ControlBlock.create(dir.resolve("control-" + tenant), 1);
                block.setMemoryLimit(0, 1024L << 20);
                block.heartbeat(System.nanoTime());
                manager.gpu(0).add(tenant.equals("stage") ? new Tenant(tenant, block, 0, request, limit, true)
                        : new Tenant(tenant, block, 0, NEIGHBOUR.request(), NEIGHBOUR.limit(), false));
            }
            manager.start();
            List<String> stage = List.of(nativeDir.resolve("bin/emu-infer").toString(), "--arrivals", arrivalFile.toString(),
                    "--batch", Integer.toString(MODEL.batch()), "--max-wait-ms", Double.toString(maxWaitMs),
                    "--kernels", Integer.toString(kernels), "--blocks", Integer.toString(MODEL.blocks()),
                    "--block-us", Double.toString(MODEL.blockUs()), "--latencies", latencies.toString());
            List<String> train = ColocationBench.command(nativeDir, trainSeconds, NEIGHBOUR, null);
            for (var run : List.of(List.of("stage", stage), List.of("train", train))) {
                @SuppressWarnings("unchecked")
                List<String> command = (List<String>) run.get(1);
                ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(nativeDir, dir.resolve("control-" + run.get(0)),
                        command)).redirectOutput(dir.resolve(run.get(0) + ".out").toFile())
                        .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("stderr.log").toFile()));
                pb.environment().put("DILU_EMU_DIR", Files.createDirectories(dir.resolve("gpu")).toString());
                processes.add(pb.start());
            }
            for (Process process : processes) {
                if (!process.waitFor(trainSeconds + 120L, TimeUnit.SECONDS) || process.exitValue() != 0) {
                    throw new IllegalStateException(label + ": a workload failed or did not finish, see " + dir.resolve("stderr.log"));
                }
            }
            host = Lateness.of(manager.sortedLateness());
        } finally {
            processes.forEach(Process::destroyForcibly);
            manager.close();
        }
        double[] latency = Files.readAllLines(latencies, StandardCharsets.UTF_8).stream().filter(l -> !l.isBlank())
                .mapToDouble(Double::parseDouble).toArray();
        double rate = ColocationBench.number(Files.readString(dir.resolve("train.out"), StandardCharsets.UTF_8),
                "blocks_per_second");
        hostLateness.add(host);
        return new StageRun(latency, rate);
    }

    /** The whole pipeline: stage 1 on the arrivals, stage 2 on stage 1's departures; per-request sums. */
    double[] pipeline(String label, double[] requests, double[] limits, List<Double> arrivals, double[] neighbourRates)
            throws Exception {
        StageRun first = stage(label + "-1", STAGE_KERNELS[0], requests[0], limits[0], MODEL.maxWaitMs(), arrivals);
        List<Double> departures = new ArrayList<>();
        for (int i = 0; i < arrivals.size(); i++) {
            departures.add(arrivals.get(i) + first.latencyMs()[i] / 1000);
        }
        departures.sort(Double::compare);
        StageRun second = stage(label + "-2", STAGE_KERNELS[1], requests[1], limits[1], 0, departures);
        neighbourRates[0] = first.neighbourRate();
        neighbourRates[1] = second.neighbourRate();
        double[] total = new double[arrivals.size()];
        for (int i = 0; i < total.length; i++) {
            total[i] = first.latencyMs()[i] + second.latencyMs()[i];
        }
        return total;
    }

    static double p95(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[(int) (sorted.length * 0.95)];
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(USAGE, args);
        if (parsed.positional().isEmpty() || parsed.positional().size() > 2) {
            System.err.println("usage: " + USAGE);
            System.exit(2);
        }
        int seconds = parsed.seconds(1, 20, SMOKE_SECONDS);
        SplitBench bench = new SplitBench(Path.of(parsed.positional().getFirst()), seconds);
        List<Double> arrivals = ColocationBench.arrivalTimes(MODEL, seconds, 42);
        long[] weights = Arrays.stream(STAGE_KERNELS).asLongStream().toArray();
        int[] requestPercent = Apportion.largestRemainder((int) Math.round(MODEL.request() * 100), weights);
        int[] limitPercent = Apportion.largestRemainder((int) Math.round(MODEL.limit() * 100), weights);
        double[] proportionalRequest = {requestPercent[0] / 100.0, requestPercent[1] / 100.0};
        double[] proportionalLimit = {limitPercent[0] / 100.0, limitPercent[1] / 100.0};
        System.out.printf(Locale.ROOT, "EMULATED GPUs (108 SMs), %d s, %d requests, node agent defaults; stages of %s kernels "
                + "of %d, each beside a training worker%n", seconds, arrivals.size(), Arrays.toString(STAGE_KERNELS), KERNELS);

        double[] propRates = new double[2];
        double[] proportional = bench.pipeline("proportional", proportionalRequest, proportionalLimit, arrivals, propRates);
        double[] fullRates = new double[2];
        double[] full = bench.pipeline("full", new double[] {MODEL.request(), MODEL.request()},
                new double[] {MODEL.limit(), MODEL.limit()}, arrivals, fullRates);
        StageRun unsplit = bench.stage("unsplit", KERNELS, MODEL.request(), MODEL.limit(), MODEL.maxWaitMs(), arrivals);

        System.out.printf(Locale.ROOT, "  proportional (%d%%/%d%% and %d%%/%d%%): p95 %.2f ms, neighbours %.0f and %.0f blocks/s%n",
                requestPercent[0], limitPercent[0], requestPercent[1], limitPercent[1], p95(proportional), propRates[0], propRates[1]);
        System.out.printf(Locale.ROOT, "  full (20%%/40%% on each GPU):      p95 %.2f ms, neighbours %.0f and %.0f blocks/s%n",
                p95(full), fullRates[0], fullRates[1]);
        System.out.printf(Locale.ROOT, "  unsplit, one GPU (20%%/40%%):       p95 %.2f ms, neighbour %.0f blocks/s%n",
                p95(unsplit.latencyMs()), unsplit.neighbourRate());
        Lateness host = Lateness.worst(bench.hostLateness);
        System.out.printf(Locale.ROOT, "  host late, the worst of the %d runs: p99 %.3f ms, max %.3f ms%n", bench.hostLateness.size(),
                host.p99Ms(), host.maxMs());
        System.out.printf(Locale.ROOT, "BENCH split gpu=emulated seconds=%d proportional_p95_ms=%.2f full_p95_ms=%.2f unsplit_p95_ms=%.2f "
                + "proportional_neighbour_rate=%.0f full_neighbour_rate=%.0f sm_booked_proportional=%d sm_booked_full=%d %s%n",
                seconds, p95(proportional), p95(full), p95(unsplit.latencyMs()), (propRates[0] + propRates[1]) / 2,
                (fullRates[0] + fullRates[1]) / 2, requestPercent[0] + requestPercent[1], 2 * Math.round(MODEL.request() * 100),
                host.hostKeys());
    }
}
