package io.dilu.deviceplugin.bench;

import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.bench.ColocationBench.Inference;
import io.dilu.deviceplugin.bench.ColocationBench.Mode;
import io.dilu.deviceplugin.bench.ColocationBench.Outcome;
import io.dilu.deviceplugin.bench.ColocationBench.Scenario;
import io.dilu.deviceplugin.bench.ColocationBench.Training;
import io.dilu.deviceplugin.bench.ColocationBench.Workload;
import io.dilu.deviceplugin.bench.GpuCheck.Gpu;
import io.dilu.deviceplugin.bench.GpuCheck.Line;
import io.dilu.deviceplugin.bench.GpuCheck.Running;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.tokens.GpuTokenLoop;
import io.dilu.deviceplugin.tokens.PeriodicWakeups;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.DoublePredicate;
import java.util.function.IntFunction;
import java.util.function.ToDoubleBiFunction;

/**
 * {@code ./dilu gpu-check --colocation}: the colocation bench's three scenarios, each run its five ways, with the GPU
 * check's program — real CUDA kernels, calibrated so that a block takes the token unit on an SM — in place of the
 * emulated workloads, on this machine's GPU or the emulated one. The scenarios are the bench's own
 * ({@link ColocationBench#SCENARIOS}: kernels, grids, block times, batching, quotas, and the same arrivals file for
 * every way), their grids scaled from the {@value ColocationBench#SCENARIO_SMS} SMs they are written for to this
 * GPU's, so that a batch takes the same time on either; the figures are the bench's BENCH keys
 * ({@link ColocationBench#figures}), so that the emulated bench, this check on the emulator and this check on a GPU
 * compare line by line.
 *
 * <p>Where it differs from the bench, each for a GPU's sake: Exclusive runs each workload alone, one after the other
 * (one GPU), without the hook; the MPS ways run under NVIDIA's daemon ({@link Mps}), or are skipped and say why; the
 * token manager's MaxTokens is this GPU's.
 *
 * <p>Beside the figures, what tells the candidate causes of a GPU's weaker vertical scaling apart (issue 37): the
 * EMERGENCY periods among all the token manager's; each workload's kernels in the GPU's own time against the 5 ms
 * period, alone and under Dilu; and the launch cycle each SLO workload was judged against (the controller's
 * smallest), beside its shortest cycle alone. And the acceptance bars, reported, not enforced: the command
 * fails only when a run does.
 */
final class GpuColocation {

    /** Issue 37's bars: train-inf's inference p95 and training against Exclusive, inf-inf's worst p95. */
    static final double TRAIN_INF_P95_BAR = 1.3;
    static final double TRAIN_INF_TRAINING_BAR = 0.6;
    static final double INF_INF_P95_BAR = 1.2;

    /**
     * One way of a scenario: the bench's outcome, the program's line of each workload, and under Dilu the token
     * manager's periods and the launch cycle each SLO workload was judged against.
     */
    record Way(Outcome outcome, Map<String, Line> lines, long periods, Map<String, Double> klcReferenceMs) {}

    /** A scenario's ways that ran, and why the others did not. */
    record Result(Scenario scenario, Map<Mode, Way> ways, Map<Mode, String> skipped) {
        Map<Mode, Outcome> outcomes() {
            Map<Mode, Outcome> o = new EnumMap<>(Mode.class);
            ways.forEach((mode, way) -> o.put(mode, way.outcome()));
            return o;
        }
    }

    /** One of the bars: its figure, and whether it was met (null: not judged, a way it needs was skipped). */
    record Bar(String what, String figure, Boolean met) {}

    private final GpuCheck check;
    private final Gpu gpu;
    private final String iters;
    private final int seconds;
    private final Mps mps;
    private final Path work;
    private final TokenParameters params;

    GpuColocation(GpuCheck check, Gpu gpu, String iters, int seconds, Mps mps, Path work) {
        this.check = check;
        this.gpu = gpu;
        this.iters = iters;
        this.seconds = seconds;
        this.mps = mps;
        this.work = work;
        this.params = GpuCheck.parameters(gpu);
    }

    /** A grid written for the scenarios' SMs, as many waves on a GPU of {@code sms}. */
    static int scaled(int blocks, int sms) {
        return (int) Math.max(1, Math.round((double) blocks * sms / ColocationBench.SCENARIO_SMS));
    }

    /** A number as the program's options take it. */
    private static String arg(double v) {
        return Double.toString(v);
    }

    /** The program's command line for a workload of a scenario, on a GPU of {@code sms}. */
    static List<String> command(Workload w, int sms, String iters, int seconds, Path arrivals, double periodMs) {
        return switch (w) {
            case Inference inf -> List.of("infer", "--iters", iters, "--seconds", Integer.toString(seconds), "--arrivals",
                    arrivals.toString(), "--batch-max", Integer.toString(inf.batch()), "--max-wait-ms",
                    arg(inf.maxWaitMs()), "--kernels", Integer.toString(inf.kernels()), "--blocks",
                    Integer.toString(scaled(inf.blocks(), sms)), "--block-us", arg(inf.blockUs()), "--period-ms",
                    arg(periodMs));
            case Training t -> List.of("train", "--iters", iters, "--seconds", Integer.toString(seconds), "--kernels",
                    Integer.toString(t.kernels()), "--blocks", Integer.toString(scaled(t.blocks(), sms)), "--block-us",
                    arg(t.blockUs()), "--gap-ms", arg(t.gapMs()), "--period-ms", arg(periodMs));
        };
    }

    private double periodMs() {
        return params.period().toNanos() / 1e6;
    }

    /** The MPS ways, run one after the other under one daemon. */
    static final List<Mode> MPS_WAYS = List.of(Mode.MPS_R, Mode.MPS_L);

    /** Runs a scenario every way; an MPS way that cannot run under MPS is skipped, with the reason. */
    Result run(Scenario s) throws Exception {
        Map<Mode, Way> ways = new EnumMap<>(Mode.class);
        Map<Mode, String> skipped = new EnumMap<>(Mode.class);
        for (Mode mode : Mode.values()) {
            if (mode == MPS_WAYS.getFirst()) {
                underMps(s, ways, skipped);
            } else if (!MPS_WAYS.contains(mode)) {
                ways.put(mode, run(s, mode, Map.of()));
            }
        }
        return new Result(s, ways, skipped);
    }

    /**
     * The MPS ways under one daemon, started for them and quit after them (where this check starts it), so that the
     * other ways run as the machine had them.
     */
    private void underMps(Scenario s, Map<Mode, Way> ways, Map<Mode, String> skipped) throws Exception {
        Mps.Session session;
        try {
            session = mps.open();
        } catch (Mps.Unavailable e) {
            MPS_WAYS.forEach(mode -> skipped.put(mode, e.getMessage()));
            return;
        }
        try {
            for (Mode mode : MPS_WAYS) {
                try {
                    ways.put(mode, run(s, mode, session.clientEnv()));
                } catch (IllegalStateException e) {
                    if (gpu.emulated()) {
                        throw e;
                    }
                    skipped.put(mode, "a workload failed under MPS: " + e.getMessage().strip().replace('\n', ' '));
                }
            }
            if (!session.serverLogged()) {
                System.out.printf(Locale.ROOT, "WARNING: %s: no MPS server log after the MPS ways: their workloads may not"
                        + " have run under MPS%n", s.name());
            }
        } finally {
            session.close();
        }
    }

    private Way run(Scenario s, Mode mode, Map<String, String> mpsEnv) throws Exception {
        Path dir = Files.createDirectories(work.resolve("colocation").resolve(s.name())
                .resolve(mode.name().toLowerCase(Locale.ROOT)));
        List<Workload> workloads = s.workloads();
        List<List<String>> commands = new ArrayList<>();
        for (int i = 0; i < workloads.size(); i++) {
            Workload w = workloads.get(i);
            Path arrivals = w instanceof Inference inf ? ColocationBench.writeArrivals(inf, seconds, i, dir) : null;
            commands.add(command(w, gpu.device().smCount(), iters, seconds, arrivals, periodMs()));
        }
        Map<String, Line> lines = new LinkedHashMap<>();
        Lateness host;
        long emergencies = 0;
        long periods = 0;
        Map<String, Double> references = new LinkedHashMap<>();
        if (mode == Mode.DILU) {
            List<ControlBlock> blocks = new ArrayList<>();
            List<Path> cycles = new ArrayList<>();
            GpuTokenLoop loop;
            try (TokenManager manager = new TokenManager(1, params, ColocationBench.shippedRefillSteps(),
                    InstantSource.system(), Lateness.samplesFor(seconds))) {
                loop = manager.gpu(0);
                for (Workload w : workloads) {
                    ControlBlock b = check.block("colocation-" + s.name() + "-" + w.name());
                    blocks.add(b);
                    cycles.add(check.publishCycles("colocation-" + s.name() + "-" + w.name(), w.slo(), b));
                    loop.add(new Tenant(w.name(), b, 0, w.request(), w.limit(), w.slo()));
                }
                manager.start();
                together(workloads, commands, i -> Optional.of(blocks.get(i)), i -> Map.of(), lines);
                host = Lateness.of(manager.sortedLateness());
            }
            // The loop's thread has stopped: its controller's memory may be read.
            emergencies = loop.periods(ControllerState.EMERGENCY);
            for (ControllerState state : ControllerState.values()) {
                periods += loop.periods(state);
            }
            for (Workload w : workloads) {
                if (w.slo()) {
                    references.put(w.name(), loop.klcReferenceMillis(w.name()));
                }
            }
            for (Path c : cycles) {
                Files.delete(c);
            }
            blocks.forEach(ControlBlock::close);
        } else {
            try (PeriodicWakeups probe = Lateness.probe((long) seconds * workloads.size())) {
                probe.start();
                if (mode == Mode.EXCLUSIVE) {
                    for (int i = 0; i < workloads.size(); i++) { // one GPU: each has it alone in turn
                        Running r = check.start(gpu, Optional.empty(), Map.of(), commands.get(i));
                        lines.put(workloads.get(i).name(), only(check.await(r, seconds + 120L)));
                    }
                } else {
                    together(workloads, commands, i -> Optional.empty(), i -> mpsEnv(mode, workloads.get(i), mpsEnv),
                            lines);
                }
                host = Lateness.of(probe.sortedLateness());
            }
        }
        Map<String, double[]> latency = new LinkedHashMap<>();
        Map<String, Double> rate = new LinkedHashMap<>();
        for (Workload w : workloads) {
            Line l = lines.get(w.name());
            if (w instanceof Inference) {
                latency.put(w.name(), new double[] {l.number("p50_ms"), l.number("p95_ms")});
            } else {
                rate.put(w.name(), l.number("blocks_per_s"));
            }
        }
        return new Way(new Outcome(latency, rate, emergencies, host), lines, periods, references);
    }

    private static Map<String, String> mpsEnv(Mode mode, Workload w, Map<String, String> daemon) {
        if (mode != Mode.MPS_R && mode != Mode.MPS_L) {
            return Map.of();
        }
        Map<String, String> env = new LinkedHashMap<>(daemon);
        env.put(Mps.PERCENT_ENV, ColocationBench.percent(mode == Mode.MPS_R ? w.request() : w.limit()));
        return env;
    }

    /** Starts every workload at once and waits for all; one that fails ends the others. */
    private void together(List<Workload> workloads, List<List<String>> commands,
            IntFunction<Optional<ControlBlock>> block,
            IntFunction<Map<String, String>> env, Map<String, Line> lines) throws Exception {
        List<Running> running = new ArrayList<>();
        try {
            for (int i = 0; i < workloads.size(); i++) {
                running.add(check.start(gpu, block.apply(i), env.apply(i), commands.get(i)));
            }
            for (int i = 0; i < workloads.size(); i++) {
                lines.put(workloads.get(i).name(), only(check.await(running.get(i), seconds + 120L)));
            }
        } finally {
            running.forEach(r -> r.process().destroyForcibly());
        }
    }

    /** A workload's one line: infer's or train's. */
    private static Line only(Map<String, Line> lines) {
        return Optional.ofNullable(lines.get("infer")).or(() -> Optional.ofNullable(lines.get("train")))
                .orElseThrow(() -> new IllegalStateException("dilu-gpu-check printed no infer or train line: " + lines));
    }

    // ---- what is printed ----

    private static String key(String workload) {
        return workload.replace('-', '_');
    }

    private static String fmt3(double v) {
        return Double.isNaN(v) ? "none" : String.format(Locale.ROOT, "%.3f", v);
    }

    /** The bars for a scenario; a bar against a way that did not run is not judged. */
    static List<Bar> bars(Scenario s, Map<Mode, Outcome> o) {
        List<Bar> bars = new ArrayList<>();
        switch (s.name()) {
            case "train-inf" -> {
                bars.add(bound("inference p95 vs Exclusive <= " + TRAIN_INF_P95_BAR,
                        ColocationBench.worstP95VsExclusive(o, Mode.DILU), v -> v <= TRAIN_INF_P95_BAR));
                bars.add(bound("training vs Exclusive >= " + TRAIN_INF_TRAINING_BAR,
                        ColocationBench.trainingVsExclusive(o, Mode.DILU), v -> v >= TRAIN_INF_TRAINING_BAR));
                beatsTheOthers(bars, o, "inference p95", ColocationBench::worstP95VsExclusive, true);
            }
            case "inf-inf" -> {
                bars.add(bound("worst p95 vs Exclusive <= " + INF_INF_P95_BAR,
                        ColocationBench.worstP95VsExclusive(o, Mode.DILU), v -> v <= INF_INF_P95_BAR));
                beatsTheOthers(bars, o, "worst p95", ColocationBench::worstP95VsExclusive, true);
            }
            default -> beatsTheOthers(bars, o, "training", ColocationBench::trainingVsExclusive, false);
        }
        return bars;
    }

    private static Bar bound(String what, double value, DoublePredicate met) {
        return new Bar(what, fmt3(value), met.test(value));
    }

    /** Dilu better than no control and than each MPS way: a lower p95, or a higher throughput. */
    private static void beatsTheOthers(List<Bar> bars, Map<Mode, Outcome> o, String figure,
            ToDoubleBiFunction<Map<Mode, Outcome>, Mode> of, boolean lowerIsBetter) {
        double dilu = of.applyAsDouble(o, Mode.DILU);
        for (Mode other : List.of(Mode.NO_CONTROL, Mode.MPS_L, Mode.MPS_R)) {
            String what = "Dilu's " + figure + (lowerIsBetter ? " below " : " above ") + other.label + "'s";
            if (!o.containsKey(other)) {
                bars.add(new Bar(what, ColocationBench.SKIPPED, null));
                continue;
            }
            double theirs = of.applyAsDouble(o, other);
            bars.add(new Bar(what, fmt3(dilu) + "/" + fmt3(theirs), lowerIsBetter ? dilu < theirs : dilu > theirs));
        }
    }

    /** The diagnostics' BENCH keys (see the class comment). */
    static String diagnostics(Result r) {
        StringBuilder keys = new StringBuilder();
        Way dilu = r.ways().get(Mode.DILU);
        Way exclusive = r.ways().get(Mode.EXCLUSIVE);
        keys.append(" dilu_periods=").append(dilu.periods());
        for (Workload w : r.scenario().workloads()) {
            String k = key(w.name());
            keys.append(' ').append(k).append("_kernel_p95_ms_exclusive=")
                    .append(fmt3(exclusive.lines().get(w.name()).number("kernel_ms_p95")));
            keys.append(' ').append(k).append("_kernel_p95_ms_dilu=")
                    .append(fmt3(dilu.lines().get(w.name()).number("kernel_ms_p95")));
            keys.append(' ').append(k).append("_over_period_dilu=")
                    .append(String.format(Locale.ROOT, "%.4f", dilu.lines().get(w.name()).number("kernels_over_period")));
            if (w.slo()) {
                keys.append(' ').append(k).append("_klc_ref_ms=").append(fmt3(dilu.klcReferenceMs().get(w.name())));
                keys.append(' ').append(k).append("_cycle_alone_min_ms=")
                        .append(fmt3(exclusive.lines().get(w.name()).number("cycle_ms_min")));
            }
        }
        return keys.toString();
    }

    String benchLine(Result r) {
        Map<Mode, Outcome> o = r.outcomes();
        long missed = bars(r.scenario(), o).stream().filter(b -> Boolean.FALSE.equals(b.met())).count();
        return String.format(Locale.ROOT, "BENCH gpu-check-colocation scenario=%s gpu=%s sms=%d seconds=%d threshold=%.2f"
                        + " mps=%s", r.scenario().name(), GpuCheck.label(gpu), gpu.device().smCount(), seconds,
                params.etaViolation(), mps.kind().label)
                + ColocationBench.figures(r.scenario(), o) + diagnostics(r) + " bars_missed=" + missed + " "
                + Lateness.worst(o.values().stream().map(Outcome::host).toList()).hostKeys();
    }

    private void print(Result r) {
        System.out.println(r.scenario().name() + ":");
        for (Mode mode : Mode.values()) {
            if (r.skipped().containsKey(mode)) {
                System.out.printf(Locale.ROOT, "  %-11s  skipped: %s%n", mode.label, r.skipped().get(mode));
                continue;
            }
            Way way = r.ways().get(mode);
            System.out.println(ColocationBench.row(mode, way.outcome()));
            List<String> kernels = new ArrayList<>();
            List<String> cycles = new ArrayList<>();
            way.lines().forEach((name, l) -> {
                kernels.add(String.format(Locale.ROOT, "%s %.2f/%.2f/%.2f (%.1f%%)", name, l.number("kernel_ms_p50"),
                        l.number("kernel_ms_p95"), l.number("kernel_ms_max"), l.number("kernels_over_period") * 100));
                cycles.add(String.format(Locale.ROOT, "%s %.2f/%.2f", name, l.number("cycle_ms_min"),
                        l.number("cycle_ms_p50")));
            });
            System.out.printf(Locale.ROOT, "  %-11s  kernels ms p50/p95/max (over the %.0f ms period): %s; launch cycles ms"
                    + " min/p50: %s%n", "", periodMs(), String.join(", ", kernels), String.join(", ", cycles));
            if (mode == Mode.DILU) {
                List<String> refs = new ArrayList<>();
                way.klcReferenceMs().forEach((name, ms) -> refs.add(String.format(Locale.ROOT,
                        "%s %s ms (shortest alone %.3f ms)", name, fmt3(ms),
                        r.ways().get(Mode.EXCLUSIVE).lines().get(name).number("cycle_ms_min"))));
                System.out.printf(Locale.ROOT, "  %-11s  token manager: %d of %d periods in EMERGENCY (%.1f%%)%s%n", "",
                        way.outcome().emergencyPeriods(), way.periods(),
                        way.periods() == 0 ? 0.0 : 100.0 * way.outcome().emergencyPeriods() / way.periods(),
                        refs.isEmpty() ? "" : "; cycle judged against " + String.join(", ", refs));
            }
        }
        List<String> judged = bars(r.scenario(), r.outcomes()).stream().map(b -> b.what() + ": " + b.figure() + " "
                + (b.met() == null ? "(not judged)" : b.met() ? "met" : "MISSED")).toList();
        System.out.println("  bars (issue 37, reported, not enforced): " + String.join("; ", judged));
    }

    /** {@code GpuCheck NATIVE_BUILD_DIR --colocation …}: every scenario wanted, then one BENCH line each. */
    static void main(GpuCheck check, GpuCheck.Args args) throws Exception {
        Gpu gpu = check.discover();
        GpuCheck.printGpu(gpu);
        String iters = check.calibrate(gpu);
        Path work = Files.createDirectories(check.work().resolve("colocation-mps"));
        Mps mps = gpu.emulated() ? Mps.emulated() : Mps.onGpu(System.getenv(), Mps.DEFAULT_PIPE, work);
        GpuColocation colocation = new GpuColocation(check, gpu, iters, args.seconds(), mps, check.work());
        TokenParameters params = colocation.params;
        System.out.printf(Locale.ROOT, "co-location%s: the colocation bench's scenarios with dilu-gpu-check's kernels (%s"
                        + " iterations a token-unit block), %d s per run; grids scaled ×%.3f from the %d SMs they are"
                        + " written for; node agent defaults: KLC threshold %.2f, refills in %d parts; MPS %s%n",
                args.smoke() ? " (smoke size: too short to judge a bar)" : "", iters, args.seconds(),
                (double) gpu.device().smCount() / ColocationBench.SCENARIO_SMS, ColocationBench.SCENARIO_SMS,
                params.etaViolation(), ColocationBench.shippedRefillSteps(), mps.describe());
        List<String> lines = new ArrayList<>();
        for (Scenario s : ColocationBench.SCENARIOS) {
            if (!args.wanted().isEmpty() && !args.wanted().contains(s.name())) {
                continue;
            }
            Result r = colocation.run(s);
            colocation.print(r);
            lines.add(colocation.benchLine(r));
        }
        lines.forEach(System.out::println);
    }
}
