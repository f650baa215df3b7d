package io.dilu.deviceplugin.bench;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.agent.NodeAgent;
import io.dilu.deviceplugin.agent.NodeAgentConfig;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.PeriodicWakeups;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.testing.ShippedConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleBinaryOperator;
import java.util.function.ToDoubleBiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Vertical scaling on the emulated GPU, at the node agent's shipped defaults: three co-locations, each run
 * five ways — every workload on a GPU of its own (Exclusive), sharing one GPU without control, under MPS
 * limits at each workload's request (MPS-r) and at its limit (MPS-l), and with Dilu's token manager. The
 * emulated GPU dispatches thread blocks in launch order (its default model, like MPS); MPS limits are the
 * emulator's model of CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. Every figure is from the emulated GPU. How late the host
 * ran each run is measured beside it: the token loop's 5 ms periods under Dilu, a bare probe waking on the same
 * deadlines in the other modes; a scenario's BENCH line carries its worst run's.
 *
 * <p>Usage: {@code ColocationBench NATIVE_BUILD_DIR [SECONDS | --smoke] [SCENARIO...]}: 30 s per run by default,
 * {@value #SMOKE_SECONDS} s with {@code --smoke}.
 */
public final class ColocationBench {

    /** How the GPU is shared in one run. */
    public enum Mode {
        EXCLUSIVE("exclusive"), NO_CONTROL("no control"), MPS_R("MPS-r"), MPS_L("MPS-l"), DILU("dilu");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }

    /** A workload of a scenario, with its quotas in fractions of the GPU. */
    public sealed interface Workload {
        String name();

        double request();

        double limit();

        boolean slo();
    }

    /**
     * An SLO inference server: Gamma-distributed inter-arrival times (the paper's Gamma workloads, after
     * FastServe) of the given mean rate and coefficient of variation; each batch runs {@code kernels} kernels.
     */
    public record Inference(String name, double request, double limit, double rps, double cv, int batch,
            double maxWaitMs, int kernels, int blocks, double blockUs) implements Workload {
        @Override
        public boolean slo() {
            return true;
        }
    }

    /** A best-effort training loop: {@code kernels} kernels, a synchronisation, then {@code gapMs} of communication. */
    public record Training(String name, double request, double limit, int kernels, int blocks, double blockUs,
            double gapMs) implements Workload {
        @Override
        public boolean slo() {
            return false;
        }
    }

    public record Scenario(String name, List<Workload> workloads) {}

    /**
     * What one run measured: per workload, p50/p95 latency (inference) or blocks per second (training); and how late
     * the host ran it.
     */
    public record Outcome(Map<String, double[]> latencyMs, Map<String, Double> trainingRate, long emergencyPeriods,
            Lateness host) {

        double p95(String name) {
            return latencyMs.get(name)[1];
        }
    }

    /** SLO inference (40%/80%) under Gamma bursts beside a best-effort training job (40%/70%). */
    public static final Scenario TRAIN_INF = new Scenario("train-inf", List.of(
            new Inference("inference", 0.40, 0.80, 100, 4, 8, 4, 20, 108, 100),
            new Training("training", 0.40, 0.70, 8, 432, 100, 3)));

    /** Two inference functions, one steady (Poisson) and one bursty (Gamma, CV 4). */
    public static final Scenario INF_INF = new Scenario("inf-inf", List.of(
            new Inference("steady", 0.30, 0.60, 100, 1, 8, 4, 20, 108, 100),
            new Inference("bursty", 0.30, 0.60, 100, 4, 8, 4, 10, 216, 100)));

    /** Two training jobs of different kernel shapes and communication gaps. */
    public static final Scenario TRAIN_TRAIN = new Scenario("train-train", List.of(
            new Training("train-a", 0.40, 0.70, 8, 432, 100, 3),
            new Training("train-b", 0.40, 0.70, 4, 864, 100, 5)));

    public static final List<Scenario> SCENARIOS = List.of(TRAIN_INF, INF_INF, TRAIN_TRAIN);

    static final String USAGE = "ColocationBench NATIVE_BUILD_DIR [SECONDS | --smoke] [train-inf|inf-inf|train-train ...]";
    /** Seconds per run with {@code --smoke}: all three scenarios, five runs each, within a minute. */
    static final int SMOKE_SECONDS = 2;

    private static final GpuDevice EMULATED_GPU = new GpuDevice("GPU-emu-bench-0", 0, "A100-40GB", 40_960, 108);
    /** The SMs the scenarios' grids are written for (a kernel of this many blocks is one wave of the GPU). */
    static final int SCENARIO_SMS = EMULATED_GPU.smCount();

    private final Path nativeDir;
    private final Path work;
    private final int seconds;

    public ColocationBench(Path nativeDir, int seconds) throws IOException {
        this.nativeDir = nativeDir;
        this.work = Files.createTempDirectory("dilu-colocation-");
        this.seconds = seconds;
    }

    /** The node agent's configuration with nothing set: what it ships. */
    static NodeAgentConfig shipped() {
        return ShippedConfig.defaults(NodeAgentConfig.class).getConfigMapping(NodeAgentConfig.class);
    }

    /** Algorithm 2's parameters exactly as the node agent ships them, for the emulated A100's 108 SMs. */
    public static TokenParameters shippedParameters() {
        return NodeAgent.tokenParameters(shipped(), List.of(EMULATED_GPU)).getFirst();
    }

    /** The parts in which the agent releases best-effort tokens over a period, as shipped. */
    public static int shippedRefillSteps() {
        return shipped().refillSteps();
    }

    /** Runs a scenario every way. */
    public Map<Mode, Outcome> run(Scenario scenario) throws Exception {
        Map<Mode, Outcome> outcomes = new EnumMap<>(Mode.class);
        for (Mode mode : Mode.values()) {
            outcomes.put(mode, run(scenario, mode));
        }
        return outcomes;
    }

    private Outcome run(Scenario scenario, Mode mode) throws Exception {
        Path dir = Files.createDirectories(work.resolve(scenario.name()).resolve(mode.name().toLowerCase(Locale.ROOT)));
        List<Workload> workloads = scenario.workloads();
        Map<String, ControlBlock> blocks = new LinkedHashMap<>();
        for (Workload w : workloads) {
            ControlBlock block = ControlBlock.create(dir.resolve("control-" + w.name()), 1);
            block.setMemoryLimit(0, 1024L << 20);
            block.heartbeat(System.nanoTime());
            blocks.put(w.name(), block);
        }
        // The GPU's neighbours directory, as Allocate mounts it: the workloads' cycle pages, linked as the agent links
        // them.
        Path neighbours = Files.createDirectories(dir.resolve("neighbours"));
        TokenManager manager = null;
        PeriodicWakeups probe = null;
        if (mode == Mode.DILU) {
            for (Workload w : workloads) {
                Files.createLink(neighbours.resolve(ControlBlock.neighbourName(w.slo(), w.name())),
                        blocks.get(w.name()).createCyclePage());
            }
            manager = new TokenManager(1, shippedParameters(), shippedRefillSteps(), InstantSource.system(),
                    Lateness.samplesFor(seconds));
            for (Workload w : workloads) {
                manager.gpu(0).add(new Tenant(w.name(), blocks.get(w.name()), 0, w.request(), w.limit(), w.slo()));
            }
            manager.start();
        } else {
            probe = Lateness.probe(seconds);
            probe.start();
        }
        List<Process> processes = new ArrayList<>();
        Lateness host;
        try {
            for (int i = 0; i < workloads.size(); i++) {
                Workload w = workloads.get(i);
                Path gpu = Files.createDirectories(dir.resolve(mode == Mode.EXCLUSIVE ? "gpu-" + i : "gpu"));
                List<String> command = command(w, dir, i);
                ProcessBuilder pb = new ProcessBuilder(mode == Mode.DILU
                        ? TestingContainers.contained(nativeDir, blocks.get(w.name()), neighbours, command) : command)
                        .redirectOutput(dir.resolve(w.name() + ".out").toFile())
                        .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("stderr.log").toFile()));
                Map<String, String> env = pb.environment();
                env.put("DILU_EMU_DIR", gpu.toString());
                switch (mode) {
                    case MPS_R -> env.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent(w.request()));
                    case MPS_L -> env.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent(w.limit()));
                    default -> { }
                }
                processes.add(pb.start());
            }
            for (Process p : processes) {
                if (!p.waitFor(seconds + 120L, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(scenario.name() + "/" + mode.label + ": a workload did not finish");
                }
                if (p.exitValue() != 0) {
                    throw new IllegalStateException(scenario.name() + "/" + mode.label + ": a workload failed, see "
                            + dir.resolve("stderr.log"));
                }
            }
            host = Lateness.of(manager != null ? manager.sortedLateness() : probe.sortedLateness());
        } finally {
            processes.forEach(Process::destroyForcibly);
            if (manager != null) {
                manager.close();
            }
            if (probe != null) {
                probe.close();
            }
        }
        Map<String, double[]> latency = new LinkedHashMap<>();
        Map<String, Double> rate = new LinkedHashMap<>();
        for (Workload w : workloads) {
            String out = Files.readString(dir.resolve(w.name() + ".out"), StandardCharsets.UTF_8);
            if (w instanceof Inference) {
                latency.put(w.name(), new double[] {number(out, "p50_ms"), number(out, "p95_ms")});
            } else {
                rate.put(w.name(), number(out, "blocks_per_second"));
            }
        }
        long emergencies = manager == null ? 0 : manager.gpu(0).periods(ControllerState.EMERGENCY);
        return new Outcome(latency, rate, emergencies, host);
    }

    /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for a share of the GPU. */
    static String percent(double share) {
        return Long.toString(Math.round(share * 100));
    }

    private List<String> command(Workload w, Path dir, int index) throws IOException {
        return command(nativeDir, seconds, w, w instanceof Inference inf ? arrivals(inf, dir, index) : null);
    }

    /** The emulated workload's command line: emu-infer over an arrivals file, or emu-train for {@code seconds}. */
    static List<String> command(Path nativeDir, int seconds, Workload w, Path arrivals) {
        return switch (w) {
            case Inference inf -> List.of(nativeDir.resolve("bin/emu-infer").toString(),
                    "--arrivals", arrivals.toString(), "--batch", Integer.toString(inf.batch()),
                    "--max-wait-ms", Double.toString(inf.maxWaitMs()), "--kernels", Integer.toString(inf.kernels()), "--blocks",
                    Integer.toString(inf.blocks()), "--block-us", Double.toString(inf.blockUs()));
            case Training t -> List.of(nativeDir.resolve("bin/emu-train").toString(), "--seconds",
                    Integer.toString(seconds), "--kernels", Integer.toString(t.kernels()), "--blocks",
                    Integer.toString(t.blocks()), "--block-us", Double.toString(t.blockUs()), "--gap-ms",
                    Double.toString(t.gapMs()));
        };
    }

    private Path arrivals(Inference inf, Path dir, int index) throws IOException {
        return writeArrivals(inf, seconds, index, dir);
    }

    /**
     * The arrivals file (seconds, one a line) of the inference workload at {@code index} of its scenario: Gamma
     * inter-arrival times seeded by that position, so that every mode, and the GPU check's co-location, serve the same
     * requests.
     */
    static Path writeArrivals(Inference inf, int seconds, int index, Path dir) throws IOException {
        StringBuilder lines = new StringBuilder();
        for (double t : arrivalTimes(inf, seconds, 42 + index)) {
            lines.append(String.format(Locale.ROOT, "%.6f%n", t));
        }
        return Files.writeString(dir.resolve(inf.name() + "-arrivals.txt"), lines);
    }

    /** Request times (seconds from the start) with Gamma inter-arrival times of the function's rate and CV. */
    static List<Double> arrivalTimes(Inference inf, int seconds, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double shape = 1 / (inf.cv() * inf.cv());
        double scale = 1 / (inf.rps() * shape);
        List<Double> times = new ArrayList<>();
        for (double t = GammaSampler.next(random, shape) * scale; t < seconds; t += GammaSampler.next(random, shape) * scale) {
            times.add(t);
        }
        return times;
    }

    static double number(String text, String key) {
        Matcher m = Pattern.compile(key + "=([0-9.]+)").matcher(text);
        if (!m.find()) {
            throw new IllegalStateException("no " + key + " in: " + text);
        }
        return Double.parseDouble(m.group(1));
    }

    // ---- the figures ----

    static double trainingVsExclusive(Map<Mode, Outcome> o, Mode mode) {
        double sum = 0, exclusive = 0;
        for (String name : o.get(Mode.EXCLUSIVE).trainingRate().keySet()) {
            sum += o.get(mode).trainingRate().get(name);
            exclusive += o.get(Mode.EXCLUSIVE).trainingRate().get(name);
        }
        return sum / exclusive;
    }

    /** The worse of the inference functions' p95 latencies, each relative to its own on an exclusive GPU. */
    static double worstP95VsExclusive(Map<Mode, Outcome> o, Mode mode) {
        double worst = 0;
        for (String name : o.get(Mode.EXCLUSIVE).latencyMs().keySet()) {
            worst = Math.max(worst, o.get(mode).p95(name) / o.get(Mode.EXCLUSIVE).p95(name));
        }
        return worst;
    }

    static String benchLine(Scenario s, Map<Mode, Outcome> o, double threshold, int seconds) {
        String head = String.format(Locale.ROOT, "BENCH colocation scenario=%s gpu=emulated seconds=%d threshold=%.2f",
                s.name(), seconds, threshold);
        String host = " " + Lateness.worst(o.values().stream().map(Outcome::host).toList()).hostKeys();
        return head + figures(s, o) + host;
    }

    /**
     * A scenario's figures as BENCH keys, each way against Exclusive, which must be among the outcomes; a way missing
     * from them (MPS on a GPU without its daemon, in the GPU check) reads {@code skipped}. The GPU check prints the
     * same keys, so that its lines and this bench's compare key by key.
     */
    static String figures(Scenario s, Map<Mode, Outcome> o) {
        return switch (s.name()) {
            case "train-inf" -> " inference_p95_vs_exclusive=" + way(o, Mode.DILU, ColocationBench::worstP95VsExclusive)
                    + " nocontrol_p95_vs_exclusive=" + way(o, Mode.NO_CONTROL, ColocationBench::worstP95VsExclusive)
                    + " mps_l_p95_vs_exclusive=" + way(o, Mode.MPS_L, ColocationBench::worstP95VsExclusive)
                    + " mps_r_p95_vs_exclusive=" + way(o, Mode.MPS_R, ColocationBench::worstP95VsExclusive)
                    + " training_vs_exclusive=" + way(o, Mode.DILU, ColocationBench::trainingVsExclusive)
                    + " mps_r_training_vs_exclusive=" + way(o, Mode.MPS_R, ColocationBench::trainingVsExclusive)
                    + " mps_l_training_vs_exclusive=" + way(o, Mode.MPS_L, ColocationBench::trainingVsExclusive)
                    + " emergency_periods=" + o.get(Mode.DILU).emergencyPeriods();
            case "inf-inf" -> " dilu_worst_p95_vs_exclusive=" + way(o, Mode.DILU, ColocationBench::worstP95VsExclusive)
                    + " nocontrol_worst_p95_vs_exclusive=" + way(o, Mode.NO_CONTROL, ColocationBench::worstP95VsExclusive)
                    + " mps_l_worst_p95_vs_exclusive=" + way(o, Mode.MPS_L, ColocationBench::worstP95VsExclusive)
                    + " mps_r_worst_p95_vs_exclusive=" + way(o, Mode.MPS_R, ColocationBench::worstP95VsExclusive)
                    + " best_static_worst_p95_vs_exclusive=" + bestStatic(o, ColocationBench::worstP95VsExclusive, true)
                    + " emergency_periods=" + o.get(Mode.DILU).emergencyPeriods();
            default -> " dilu_training_vs_exclusive=" + way(o, Mode.DILU, ColocationBench::trainingVsExclusive)
                    + " nocontrol_training_vs_exclusive=" + way(o, Mode.NO_CONTROL, ColocationBench::trainingVsExclusive)
                    + " mps_l_training_vs_exclusive=" + way(o, Mode.MPS_L, ColocationBench::trainingVsExclusive)
                    + " mps_r_training_vs_exclusive=" + way(o, Mode.MPS_R, ColocationBench::trainingVsExclusive)
                    + " best_static_training_vs_exclusive=" + bestStatic(o, ColocationBench::trainingVsExclusive, false);
        };
    }

    /** What is skipped in a BENCH key's place. */
    static final String SKIPPED = "skipped";

    private static String way(Map<Mode, Outcome> o, Mode mode, ToDoubleBiFunction<Map<Mode, Outcome>, Mode> figure) {
        return o.containsKey(mode) ? String.format(Locale.ROOT, "%.3f", figure.applyAsDouble(o, mode)) : SKIPPED;
    }

    /** The better of the two MPS ways that ran: the lower p95, or the higher throughput. */
    private static String bestStatic(Map<Mode, Outcome> o, ToDoubleBiFunction<Map<Mode, Outcome>, Mode> figure,
            boolean lowerIsBetter) {
        DoubleBinaryOperator better = lowerIsBetter ? Math::min : Math::max;
        OptionalDouble best = Stream.of(Mode.MPS_L, Mode.MPS_R).filter(o::containsKey)
                .mapToDouble(m -> figure.applyAsDouble(o, m)).reduce(better);
        return best.isPresent() ? String.format(Locale.ROOT, "%.3f", best.getAsDouble()) : SKIPPED;
    }

    /** A way's row of a scenario's table: each workload's figures, and how late the host ran it. */
    static String row(Mode mode, Outcome o) {
        StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "  %-11s", mode.label));
        o.latencyMs().forEach((name, l) -> row.append(
                String.format(Locale.ROOT, "  %s p50 %6.2f p95 %6.2f ms", name, l[0], l[1])));
        o.trainingRate().forEach((name, r) -> row.append(String.format(Locale.ROOT, "  %s %8.0f blocks/s", name, r)));
        row.append(String.format(Locale.ROOT, "  host late p99 %.3f ms, max %.3f ms", o.host().p99Ms(), o.host().maxMs()));
        return row.toString();
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(USAGE, args);
        if (parsed.positional().isEmpty()) {
            System.err.println("usage: " + USAGE);
            System.exit(2);
        }
        int seconds = parsed.seconds(1, 30, SMOKE_SECONDS);
        List<String> positional = parsed.positional();
        List<String> wanted = positional.subList(Math.min(positional.size(), parsed.smoke() ? 1 : 2), positional.size());
        List<String> names = SCENARIOS.stream().map(Scenario::name).toList();
        for (String w : wanted) {
            if (!names.contains(w)) {
                System.err.println("SCENARIO must be one of " + String.join(", ", names) + ", got '" + w + "'; usage: " + USAGE);
                System.exit(2);
            }
        }
        TokenParameters params = shippedParameters();
        ColocationBench bench = new ColocationBench(Path.of(positional.getFirst()), seconds);
        System.out.printf(Locale.ROOT, "EMULATED GPU (108 SMs, blocks dispatched in launch order), %d s per run;"
                + " node agent defaults: MaxTokens %d, KLC threshold %.2f, η_increase %.2f%n", seconds,
                params.maxTokens(), params.etaViolation(), params.etaIncrease());
        List<String> lines = new ArrayList<>();
        for (Scenario s : SCENARIOS) {
            if (!wanted.isEmpty() && !wanted.contains(s.name())) {
                continue;
            }
            Map<Mode, Outcome> o = bench.run(s);
            System.out.println(s.name() + ":");
            for (Mode mode : Mode.values()) {
                System.out.println(row(mode, o.get(mode)));
            }
            lines.add(benchLine(s, o, params.etaViolation(), seconds));
        }
        lines.forEach(System.out::println);
    }
}
