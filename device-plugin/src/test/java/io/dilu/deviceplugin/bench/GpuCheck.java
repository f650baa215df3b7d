package io.dilu.deviceplugin.bench;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.agent.NodeAgent;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.PeriodicWakeups;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./dilu gpu-check}: the hook and the token manager on whatever GPU this machine has — a real one found
 * through NVML (the node agent's own discovery), else the emulated driver — with one driver-API program,
 * {@code dilu-gpu-check} (hook-native/gpucheck), whose kernels are real CUDA code in a fatbin:
 *
 * <ol>
 *   <li>without the hook: the device, launch cost, compute and memory throughput, a graph, a cooperative launch,
 *       allocations past a limit (nothing refuses them);
 *   <li>under the hook: its added cost per launch (tokens to spare), then the SM share a lone container gets
 *       under the real token manager at grants of 10, 25, 50 and 100% — its throughput against the GPU's in a run
 *       without the hook just before it, in the GPU's own time — every launch counted, and an allocation past the
 *       container's memory share refused;
 *   <li>two containers on the GPU under the token manager at the node agent's shipped defaults: an SLO inference
 *       loop beside a best-effort training loop, each also alone without the hook.
 * </ol>
 *
 * Ends with one {@code BENCH gpu-check} line, labelled with the GPU's name as NVML reports it, or
 * {@code gpu=emulated}; exits 1 when a check fails (a launch not counted, an allocation past the share let
 * through, the share at 25% or 50% more than 10% off its grant, a graph or cooperative launch failing).
 *
 * <p>How late the host ran each timed run is measured beside it (the token loop's 5 ms periods, or a bare probe on
 * the same deadlines where no token manager runs). A share outside its tolerance while the host was stalled (p99
 * lateness over {@value #STALLED_P99_MS} ms) is measured again, up to {@value #SHARE_TRIES} tries in all, and the
 * output says so; a share still outside fails, saying whether the host was stalled. Nothing else is retried.
 *
 * <p>With {@code --colocation} it runs the colocation bench's scenarios with this program instead ({@link GpuColocation}).
 *
 * <p>Usage: {@code GpuCheck NATIVE_BUILD_DIR ARGS}, where ARGS are {@value #USAGE}.
 */
public final class GpuCheck {

    /** The grants whose SM share is measured, in percent of the GPU. */
    static final int[] GRANTS = {10, 25, 50, 100};
    /**
     * Pairs of runs, without and with the hook, whose launch costs are compared: at least the first, until the 95%
     * interval of the median difference is within ±{@value #LAUNCH_CI_NS} ns or the last has run.
     */
    static final int LAUNCH_PAIRS_MIN = 11;
    static final int LAUNCH_PAIRS_MAX = 41;
    static final double LAUNCH_CI_NS = 50;
    /** The memory share of a container in the checks, and the allocation step. */
    static final int SHARE_MIB = 1024;
    static final int CHUNK_MIB = 64;
    /** How far the measured share may be from its grant, relative, at 25% and 50%. */
    static final double SHARE_TOLERANCE = 0.10;
    /** Tries of a share outside its tolerance while the host was stalled. */
    static final int SHARE_TRIES = 3;
    /**
     * A run's host was stalled when its 5 ms wake-ups' p99 lateness was over this, in ms: five times what the token
     * loop's is on an idle machine (docs/benchmarks.md, agent).
     */
    static final double STALLED_P99_MS = 1.0;

    /** One line of the program's output: its phase and key=value pairs. */
    record Line(String phase, Map<String, String> values) {
        double number(String key) {
            String v = values.get(key);
            if (v == null) {
                throw new IllegalStateException("dilu-gpu-check's " + phase + " line has no " + key + ": " + values);
            }
            return Double.parseDouble(v);
        }

        String text(String key) {
            return values.getOrDefault(key, "");
        }
    }

    /** The GPU checked: what the device plugin would advertise, and whether it is the emulator. */
    record Gpu(GpuDevice device, boolean emulated, String discovery) {}

    /** A program's run and how late the host ran it. */
    record Timed<T>(T result, Lateness host) {}

    /** One try of a grant: the whole GPU without the hook, then the container at its grant under the token manager. */
    record ShareTry(Timed<Line> whole, Timed<Line> granted, ControlBlock block) {
        /** The container's blocks per second over the whole GPU's, both in the GPU's time (batches, not the gaps between). */
        double share() {
            return granted.result().number("blocks_per_gpu_s") / whole.result().number("blocks_per_gpu_s");
        }

        Lateness host() {
            return Lateness.worst(List.of(whole.host(), granted.host()));
        }
    }

    private final Path nativeDir;
    private final Path work;
    private final int seconds;
    private final List<String> failures = new ArrayList<>();

    GpuCheck(Path nativeDir, Path work, int seconds) {
        this.nativeDir = nativeDir;
        this.work = work;
        this.seconds = seconds;
    }

    /** The check's own scratch directory. */
    Path work() {
        return work;
    }

    private Path program() {
        return nativeDir.resolve("bin/dilu-gpu-check");
    }

    /** Runs the program (under the hook when a control block is given) and returns its GPUCHECK lines by phase. */
    Map<String, Line> run(Gpu gpu, Optional<ControlBlock> block, String... args) throws IOException, InterruptedException {
        return await(start(gpu, block, Map.of(), List.of(args)), seconds * 4L + 120);
    }

    /** A run of the program in progress; its output goes to files of its own. */
    record Running(Process process, Path out, Path err, String what) {}

    /** Starts the program (under the hook when a control block is given), with {@code env} added to its environment. */
    Running start(Gpu gpu, Optional<ControlBlock> block, Map<String, String> env, List<String> args) throws IOException {
        List<String> command = new ArrayList<>(List.of(program().toString()));
        command.addAll(args);
        Path neighbours = neighbours();
        List<String> full = block.map(b -> TestingContainers.contained(nativeDir, b, neighbours, command)).orElse(command);
        Path out = Files.createTempFile(work, "out-", ".txt");
        Path err = Files.createTempFile(work, "err-", ".txt");
        ProcessBuilder pb = new ProcessBuilder(full).redirectOutput(out.toFile()).redirectError(err.toFile());
        if (gpu.emulated()) {
            pb.environment().put("LD_LIBRARY_PATH", nativeDir.resolve("emu").toString());
            pb.environment().put("DILU_EMU_DIR", Files.createDirectories(work.resolve("emulated-gpu")).toString());
            pb.environment().put("DILU_EMU_LOG", "off");
        }
        pb.environment().putAll(env);
        return new Running(pb.start(), out, err, "dilu-gpu-check " + String.join(" ", args));
    }

    /** Waits for a run and returns its GPUCHECK lines by phase; a run that fails or outlasts the timeout throws. */
    Map<String, Line> await(Running r, long timeoutSeconds) throws IOException, InterruptedException {
        if (!r.process().waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            r.process().destroyForcibly();
            throw new IllegalStateException(r.what() + " did not finish in " + timeoutSeconds + " s");
        }
        String stdout = Files.readString(r.out(), StandardCharsets.UTF_8);
        if (r.process().exitValue() != 0) {
            throw new IllegalStateException(r.what() + " exited " + r.process().exitValue() + ": " + stdout
                    + Files.readString(r.err(), StandardCharsets.UTF_8));
        }
        return parse(stdout);
    }

    private static final Pattern PAIR = Pattern.compile("(\\w+)=(\"[^\"]*\"|\\S+)");

    static Map<String, Line> parse(String stdout) {
        Map<String, Line> lines = new LinkedHashMap<>();
        for (String l : stdout.split("\n")) {
            if (!l.startsWith("GPUCHECK ")) {
                continue;
            }
            String[] head = l.split(" ", 3);
            Map<String, String> values = new LinkedHashMap<>();
            Matcher m = PAIR.matcher(head.length > 2 ? head[2] : "");
            while (m.find()) {
                values.put(m.group(1), m.group(2).replace("\"", ""));
            }
            lines.put(head[1], new Line(head[1], values));
        }
        return lines;
    }

    /** The GPU as the node agent finds it: NVML (with CUDA's SM count), else the emulator as the program saw it. */
    Gpu discover() throws IOException, InterruptedException {
        Optional<NvmlInventory> nvml = NvmlInventory.load();
        if (nvml.isPresent() && !nvml.get().gpus().isEmpty()) {
            return new Gpu(nvml.get().gpus().getFirst(), false, "nvml");
        }
        Gpu probe = new Gpu(new GpuDevice("GPU-emu-check-0", 0, "emulated", 40_960, 108), true, "emulator");
        Line info = run(probe, Optional.empty(), "info").get("info");
        if (info.number("emulated") == 0) {
            // A real driver without NVML: the program's own answer stands in, and the check says so.
            return new Gpu(new GpuDevice("GPU-cuda-0", 0, info.text("name"), (long) info.number("memory_mib"),
                    (int) info.number("sms")), false, "cuda-without-nvml");
        }
        return new Gpu(new GpuDevice("GPU-emu-check-0", 0, "emulated", (long) info.number("memory_mib"),
                (int) info.number("sms")), true, "emulator");
    }

    /** The GPU's directory of its containers' cycle pages, mounted into every container as Allocate mounts it. */
    Path neighbours() throws IOException {
        return Files.createDirectories(work.resolve("neighbours"));
    }

    /** A booked container's cycle page, in the GPU's neighbours directory as the agent links it; returns the link. */
    Path publishCycles(String name, boolean sloSensitive, ControlBlock b) throws IOException {
        return Files.createLink(neighbours().resolve(ControlBlock.neighbourName(sloSensitive, name)), b.createCyclePage());
    }

    /** A control block as Allocate makes one: one device, the memory share, and a heartbeat. */
    ControlBlock block(String name) throws IOException {
        ControlBlock b = ControlBlock.create(Files.createDirectories(work.resolve("control-" + name)), 1);
        b.setMemoryLimit(0, (long) SHARE_MIB << 20);
        b.heartbeat(System.nanoTime());
        return b;
    }

    /** Algorithm 2's parameters as the node agent ships them, for this GPU (MaxTokens from its SMs). */
    static TokenParameters parameters(Gpu gpu) {
        return NodeAgent.tokenParameters(ColocationBench.shipped(), List.of(gpu.device())).getFirst();
    }

    private TokenManager tokens(Gpu gpu) {
        return new TokenManager(1, parameters(gpu), ColocationBench.shippedRefillSteps(), InstantSource.system(),
                Lateness.samplesFor(seconds * 3L));
    }

    /** A run where no token manager runs, with a probe of the host beside it. */
    private <T> Timed<T> probed(Callable<T> run) throws Exception {
        try (PeriodicWakeups probe = Lateness.probe(seconds * 3L)) {
            probe.start();
            T result = run.call();
            return new Timed<>(result, Lateness.of(probe.sortedLateness()));
        }
    }

    /** A run under a started token manager, the host's lateness its periods'. */
    private static <T> Timed<T> managed(TokenManager manager, Callable<T> run) throws Exception {
        T result = run.call();
        return new Timed<>(result, Lateness.of(manager.sortedLateness()));
    }

    /** One try of a grant; every block the container launched must have been counted, whatever its share. */
    private ShareTry shareTry(Gpu gpu, String iters, int grant, int attempt) throws Exception {
        String[] load = {"load", "--iters", iters, "--seconds", Integer.toString(seconds)};
        Timed<Line> whole = probed(() -> run(gpu, Optional.empty(), load).get("load"));
        ControlBlock b = block("grant-" + grant + "-" + attempt);
        Timed<Line> granted;
        try (TokenManager manager = tokens(gpu)) {
            manager.gpu(0).add(new Tenant("grant-" + grant, b, 0, grant / 100.0, grant / 100.0, false));
            manager.start();
            granted = managed(manager, () -> run(gpu, Optional.of(b), load).get("load"));
        }
        check(b.blocksLaunched(0) == (long) granted.result().number("blocks"), "at a " + grant + "% grant the hook counted "
                + b.blocksLaunched(0) + " blocks of " + (long) granted.result().number("blocks"));
        return new ShareTry(whole, granted, b);
    }

    /** Why the share is outside its grant's tolerance (checked at 25% and 50%), or null. */
    static String shareProblem(int grant, double share) {
        if ((grant == 25 || grant == 50) && Math.abs(share - grant / 100.0) > SHARE_TOLERANCE * grant / 100.0) {
            return String.format(Locale.ROOT, "at a %d%% grant the container got %.1f%% of the GPU", grant, share * 100);
        }
        return null;
    }

    private void check(boolean ok, String what) {
        if (!ok) {
            failures.add(what);
        }
    }

    /** The GPU's first line of output: what was found, and the token manager's budget on it. */
    static void printGpu(Gpu gpu) {
        TokenParameters params = parameters(gpu);
        System.out.printf(Locale.ROOT, "%s: %d SMs, %d MiB (found by %s); MaxTokens %d per %d ms period%n",
                gpu.emulated() ? "EMULATED GPU" : gpu.device().model(), gpu.device().smCount(),
                gpu.device().memoryMib(), gpu.discovery(), params.maxTokens(), params.period().toMillis());
    }

    /** The iteration count at which a dilu_compute block takes the token unit on this GPU. */
    String calibrate(Gpu gpu) throws IOException, InterruptedException {
        return Long.toString((long) run(gpu, Optional.empty(), "calibrate").get("calibrate").number("iters"));
    }

    /** The BENCH label of the GPU: its name as NVML reports it, or {@code emulated}. */
    static String label(Gpu gpu) {
        return gpu.emulated() ? "emulated" : gpu.device().model().replace(' ', '_');
    }

    /** Every phase; prints a table and the BENCH line, and returns the failed checks. */
    List<String> run() throws Exception {
        Gpu gpu = discover();
        Map<String, String> bench = new LinkedHashMap<>();
        bench.put("gpu", label(gpu));
        bench.put("sms", Integer.toString(gpu.device().smCount()));
        bench.put("discovery", gpu.discovery());
        printGpu(gpu);

        // (a) Without the hook.
        Map<String, Line> info = run(gpu, Optional.empty(), "info");
        String iters = calibrate(gpu);
        Map<String, Line> plain = run(gpu, Optional.empty(), "probe", "--iters", iters,
                "--alloc-limit-mib", Integer.toString(SHARE_MIB), "--alloc-chunk-mib", Integer.toString(CHUNK_MIB));
        Line alone = run(gpu, Optional.empty(), "load", "--iters", iters, "--seconds", Integer.toString(seconds)).get("load");
        double full = alone.number("blocks_per_s");
        System.out.printf(Locale.ROOT, "without the hook: %s, cc %s, driver %s; launch %.0f ns; compute %.0f blocks/s"
                        + " (%.1f µs per block per SM); memory %.0f GB/s; graph ok=%s; cooperative ok=%s;"
                        + " %s MiB past a %d MiB limit: %s%n",
                info.get("info").text("name"), info.get("info").text("cc"), info.get("info").text("driver"),
                plain.get("launch").number("ns_per_launch"), full, gpu.device().smCount() / full * 1e6,
                plain.get("memory").number("gb_per_s"), plain.get("graph").text("ok"),
                plain.get("cooperative").text("ok"), CHUNK_MIB, SHARE_MIB, plain.get("alloc").text("past_limit"));
        bench.put("compute_blocks_per_s", fmt(full));
        bench.put("memory_gb_per_s", fmt(plain.get("memory").number("gb_per_s")));
        check("1".equals(plain.get("graph").text("ok")), "a CUDA graph failed without the hook");
        check("1".equals(plain.get("cooperative").text("ok")), "a cooperative launch failed without the hook");

        // (b) Under the hook: its cost with tokens to spare (no token manager: a grant larger than any run).
        ControlBlock spare = block("spare");
        spare.grantTokens(0, Long.MAX_VALUE / 4);
        Map<String, Line> hooked = run(gpu, Optional.of(spare), "probe", "--iters", iters,
                "--alloc-limit-mib", Integer.toString(SHARE_MIB), "--alloc-chunk-mib", Integer.toString(CHUNK_MIB));
        long counted = spare.blocksLaunched(0);
        long launchedByProgram = blocksOf(hooked);
        // A launch's host time moves by hundreds of ns between processes (seen on a VM's H100: ±400 ns on 3.3 µs),
        // more than the hook adds. So the cost is the median of paired differences, each pair a run without the hook
        // and one with it, back to back (a drift of the machine falls on both), in rounds until its 95% interval is
        // within ±LAUNCH_CI_NS or LAUNCH_PAIRS_MAX pairs have run: a figure with its resolution stated.
        List<Double> plainNs = new ArrayList<>(List.of(plain.get("launch").number("ns_per_launch")));
        List<Double> hookedNs = new ArrayList<>(List.of(hooked.get("launch").number("ns_per_launch")));
        List<Double> differences = new ArrayList<>(List.of(hookedNs.getFirst() - plainNs.getFirst()));
        MedianCi cost = MedianCi.of(differences);
        while (differences.size() < LAUNCH_PAIRS_MIN
                || (cost.halfWidth() > LAUNCH_CI_NS && differences.size() < LAUNCH_PAIRS_MAX)) {
            double without = run(gpu, Optional.empty(), "launch").get("launch").number("ns_per_launch");
            double with = run(gpu, Optional.of(spare), "launch").get("launch").number("ns_per_launch");
            plainNs.add(without);
            hookedNs.add(with);
            differences.add(with - without);
            cost = MedianCi.of(differences);
        }
        double added = cost.median();
        boolean refused = "refused".equals(hooked.get("alloc").text("past_limit"))
                && "CUDA_ERROR_OUT_OF_MEMORY".equals(hooked.get("alloc").text("rc"));
        System.out.printf(Locale.ROOT, "launch, %d runs each alternated: %s ns without the hook, %s with it%n",
                differences.size(), list(plainNs), list(hookedNs));
        System.out.printf(Locale.ROOT, "the hook's cost per launch: %+.0f ns, the median of %d paired differences; %.1f%%"
                        + " interval [%+.0f, %+.0f] ns (±%.0f)%n", added, cost.n(), cost.coverage() * 100, cost.low(),
                cost.high(), cost.halfWidth());
        System.out.printf(Locale.ROOT, "under the hook: launch %.0f ns (%+.0f ns); %d blocks counted of %d launched;"
                        + " graph ok=%s; cooperative ok=%s; %d MiB past the %d MiB share: %s (%s), %d refusal(s) reported;"
                        + " %d launch cycles, mean %.3f ms%n",
                median(hookedNs), added, counted, launchedByProgram,
                hooked.get("graph").text("ok"), hooked.get("cooperative").text("ok"), CHUNK_MIB, SHARE_MIB,
                hooked.get("alloc").text("past_limit"), hooked.get("alloc").text("rc"), spare.memoryRefusals(0),
                spare.klcCount(0), klcMeanMs(spare));
        bench.put("launch_ns", fmt(median(plainNs)));
        bench.put("hook_launch_ns", fmt(median(hookedNs)));
        bench.put("hook_added_ns", fmt(added));
        bench.put("hook_added_ci95_ns", fmt(cost.halfWidth()));
        bench.put("launch_pairs", Integer.toString(cost.n()));
        bench.put("blocks_counted", Long.toString(counted));
        bench.put("blocks_launched", Long.toString(launchedByProgram));
        bench.put("alloc_past_share", hooked.get("alloc").text("past_limit"));
        bench.put("memory_refusals", Long.toString(spare.memoryRefusals(0)));
        check(counted == launchedByProgram, "the hook counted " + counted + " blocks of " + launchedByProgram + " launched");
        check(refused && spare.memoryRefusals(0) >= 1, "an allocation past the share was not refused");
        check("1".equals(hooked.get("graph").text("ok")), "a CUDA graph failed under the hook");
        check("1".equals(hooked.get("cooperative").text("ok")), "a cooperative launch failed under the hook");
        spare.close();

        // The SM share a lone container gets at each grant, under the real token manager, against the whole GPU in a
        // run just before it, both as blocks per second of the GPU's own time (events around each batch), which a host
        // late to launch the next batch does not lower. By host time, a busy host slowed the run without the hook,
        // which launches flat out, more than one that waits for tokens anyway, and every share looked larger.
        List<Lateness> hosts = new ArrayList<>();
        double whole = 0;
        int retries = 0;
        for (int grant : GRANTS) {
            ShareTry t;
            for (int attempt = 1; ; attempt++) {
                t = shareTry(gpu, iters, grant, attempt);
                String problem = shareProblem(grant, t.share());
                boolean stalled = t.host().p99Ms() > STALLED_P99_MS;
                if (problem == null) {
                    break;
                }
                if (stalled && attempt < SHARE_TRIES) {
                    System.out.printf(Locale.ROOT, "  grant %3d%%: %s; host stalled: p99 lateness %.3f ms; retried%n", grant,
                            problem, t.host().p99Ms());
                    retries++;
                    t.block().close();
                    continue;
                }
                check(false, String.format(Locale.ROOT, "%s (%s: p99 lateness %.3f ms, try %d of at most %d)", problem,
                        stalled ? "host stalled" : "host not stalled", t.host().p99Ms(), attempt, SHARE_TRIES));
                break;
            }
            Line load = t.granted().result();
            ControlBlock b = t.block();
            double reference = t.whole().result().number("blocks_per_gpu_s");
            whole = Math.max(whole, reference);
            hosts.add(t.host());
            long klc = b.klcCount(0);
            System.out.printf(Locale.ROOT, "  grant %3d%%: %.0f blocks per GPU-second = %5.1f%% of the whole GPU's %.0f just"
                            + " before; %d of %d blocks counted; %d launch cycles, mean of the last %d %.3f ms; host late p99"
                            + " %.3f ms%n", grant, load.number("blocks_per_gpu_s"), t.share() * 100, reference,
                    b.blocksLaunched(0), (long) load.number("blocks"), klc, Math.min(klc, ControlBlock.KLC_RING), klcMeanMs(b),
                    t.host().p99Ms());
            bench.put("share_" + grant, fmt3(t.share()));
            bench.put("klc_ms_" + grant, fmt3(klcMeanMs(b)));
            b.close();
        }
        bench.put("whole_blocks_per_s", fmt(whole));
        bench.put("share_retries", Integer.toString(retries));

        // (c) Two containers under the token manager at the shipped defaults, and each alone without the hook.
        String[] infer = {"infer", "--iters", iters, "--seconds", Integer.toString(seconds * 3), "--rate", "300"};
        String[] train = {"train", "--iters", iters, "--seconds", Integer.toString(seconds * 3)};
        Timed<Line> inferAloneRun = probed(() -> run(gpu, Optional.empty(), infer).get("infer"));
        Timed<Line> trainAloneRun = probed(() -> run(gpu, Optional.empty(), train).get("train"));
        Line inferAlone = inferAloneRun.result();
        Line trainAlone = trainAloneRun.result();
        hosts.add(inferAloneRun.host());
        hosts.add(trainAloneRun.host());
        ControlBlock inferBlock = block("infer");
        Path inferCycles = publishCycles("infer", true, inferBlock);
        ControlBlock trainBlock = block("train");
        Path trainCycles = publishCycles("train", false, trainBlock);
        Line inferShared;
        Line trainShared;
        long emergencies;
        try (TokenManager manager = tokens(gpu)) {
            manager.gpu(0).add(new Tenant("infer", inferBlock, 0, 0.40, 0.80, true));
            manager.gpu(0).add(new Tenant("train", trainBlock, 0, 0.40, 0.70, false));
            manager.start();
            var inferRun = new java.util.concurrent.FutureTask<>(() -> run(gpu, Optional.of(inferBlock), infer));
            Thread t = Thread.ofPlatform().start(inferRun);
            Timed<Line> trainRun = managed(manager, () -> {
                Line line = run(gpu, Optional.of(trainBlock), train).get("train");
                t.join();
                return line;
            });
            trainShared = trainRun.result();
            hosts.add(trainRun.host());
            inferShared = inferRun.get().get("infer");
            emergencies = manager.gpu(0).periods(ControllerState.EMERGENCY);
        }
        double p95Ratio = inferShared.number("p95_ms") / inferAlone.number("p95_ms");
        double trainRatio = trainShared.number("blocks_per_s") / trainAlone.number("blocks_per_s");
        long inferKlc = inferBlock.klcCount(0);
        System.out.printf(Locale.ROOT, "two containers (inference SLO 40%%/80%%, training best-effort 40%%/70%%), %d s:"
                        + " inference p95 %.2f ms (alone %.2f, ×%.2f), p50 %.2f ms (alone %.2f); training %.0f blocks/s"
                        + " (alone %.0f, ×%.2f); %d emergency periods; inference KLC mean %.3f ms over %d cycles%n",
                seconds * 3, inferShared.number("p95_ms"), inferAlone.number("p95_ms"), p95Ratio,
                inferShared.number("p50_ms"), inferAlone.number("p50_ms"), trainShared.number("blocks_per_s"),
                trainAlone.number("blocks_per_s"), trainRatio, emergencies,
                klcMeanMs(inferBlock), inferKlc);
        bench.put("infer_p95_alone_ms", fmt3(inferAlone.number("p95_ms")));
        bench.put("infer_p95_shared_ms", fmt3(inferShared.number("p95_ms")));
        bench.put("infer_p95_vs_alone", fmt3(p95Ratio));
        bench.put("train_vs_alone", fmt3(trainRatio));
        bench.put("emergency_periods", Long.toString(emergencies));
        Files.delete(inferCycles);
        Files.delete(trainCycles);
        inferBlock.close();
        trainBlock.close();

        Lateness host = Lateness.worst(hosts);
        System.out.printf(Locale.ROOT, "host late, the worst of the timed runs: p99 %.3f ms, max %.3f ms%n", host.p99Ms(),
                host.maxMs());
        bench.put("host_late_p99_ms", fmt3(host.p99Ms()));
        bench.put("host_late_max_ms", fmt3(host.maxMs()));
        bench.put("checks_failed", Integer.toString(failures.size()));
        StringBuilder line = new StringBuilder("BENCH gpu-check");
        bench.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        failures.forEach(f -> System.out.println("FAILED: " + f));
        System.out.println(line);
        return failures;
    }

    /** The mean of the kernel launch cycles the hook reported last (its ring of {@link ControlBlock#KLC_RING}), in ms. */
    static double klcMeanMs(ControlBlock b) {
        long count = b.klcCount(0);
        long n = Math.min(count, ControlBlock.KLC_RING);
        double sum = 0;
        for (long i = count - n + 1; i <= count; i++) {
            sum += b.klcNanos(0, i);
        }
        return n == 0 ? 0 : sum / n / 1e6;
    }

    static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static String list(List<Double> values) {
        return values.stream().map(v -> String.format(Locale.ROOT, "%.0f", v)).toList().toString();
    }

    /** Blocks the probe launched, warm-ups and graph launches included, as the program counted them. */
    static long blocksOf(Map<String, Line> probe) {
        return (long) probe.get("total").number("blocks");
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String fmt3(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    /** As the user calls it (./dilu, or the bundle's script, puts NATIVE_BUILD_DIR first). */
    static final String USAGE = "gpu-check [--seconds S]"
            + " | gpu-check --colocation [--seconds S | --smoke] [train-inf|inf-inf|train-train ...]";
    /**
     * Seconds per timed run: the plain check's; the co-location's, a third of the bench's so that its 18 runs end
     * within 5 minutes on an H100; and at the smoke size, the bench's.
     */
    static final int SECONDS = 3;
    static final int COLOCATION_SECONDS = 10;
    static final int SMOKE_SECONDS = ColocationBench.SMOKE_SECONDS;

    /**
     * The command line: the plain check, or the co-location's scenarios ({@code wanted}; empty: all).
     *
     * @param seconds per timed run
     */
    record Args(Path nativeDir, int seconds, boolean colocation, boolean smoke, List<String> wanted) {

        /** Parses the command line; a bad one throws, saying which argument and what it may be. */
        static Args parse(String[] args) {
            if (args.length < 1 || args[0].startsWith("--")) {
                throw new IllegalArgumentException("the first argument must be the native build directory");
            }
            Integer seconds = null;
            boolean colocation = false;
            boolean smoke = false;
            List<String> wanted = new ArrayList<>();
            List<String> names = ColocationBench.SCENARIOS.stream().map(ColocationBench.Scenario::name).toList();
            for (int i = 1; i < args.length; i++) {
                switch (args[i]) {
                    case "--seconds" -> {
                        String text = i + 1 < args.length ? args[++i] : "nothing";
                        try {
                            seconds = Integer.parseInt(text);
                        } catch (NumberFormatException e) {
                            seconds = -1;
                        }
                        if (seconds < 1 || seconds > 600) {
                            throw new IllegalArgumentException("--seconds must be a whole number in 1..600, got " + text);
                        }
                    }
                    case "--colocation" -> colocation = true;
                    case BenchArgs.SMOKE -> smoke = true;
                    default -> {
                        if (args[i].startsWith("--")) {
                            throw new IllegalArgumentException("unknown option " + args[i]
                                    + ": the options are --seconds S, --colocation and (with it) --smoke");
                        }
                        if (!names.contains(args[i])) {
                            throw new IllegalArgumentException("SCENARIO must be one of " + String.join(", ", names)
                                    + ", got '" + args[i] + "'");
                        }
                        wanted.add(args[i]);
                    }
                }
            }
            if (!colocation && (smoke || !wanted.isEmpty())) {
                throw new IllegalArgumentException((smoke ? BenchArgs.SMOKE : "SCENARIO '" + wanted.getFirst() + "'")
                        + " goes with --colocation");
            }
            if (smoke && seconds != null) {
                throw new IllegalArgumentException(BenchArgs.SMOKE + " sets the runs' length: give no --seconds with it");
            }
            int length = seconds != null ? seconds : smoke ? SMOKE_SECONDS : colocation ? COLOCATION_SECONDS : SECONDS;
            return new Args(Path.of(args[0]), length, colocation, smoke, List.copyOf(wanted));
        }
    }

    public static void main(String[] args) throws Exception {
        Args parsed;
        try {
            parsed = Args.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("gpu-check: " + e.getMessage() + "; usage: " + USAGE);
            System.exit(2);
            return;
        }
        Path work = Files.createTempDirectory("dilu-gpu-check-");
        GpuCheck check = new GpuCheck(parsed.nativeDir(), work, parsed.seconds());
        if (parsed.colocation()) {
            GpuColocation.main(check, parsed);
            return;
        }
        List<String> failed = check.run();
        System.exit(failed.isEmpty() ? 0 : 1);
    }
}
