package io.dilu.deviceplugin.bench;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Vertical scaling on the emulated GPU: an SLO-sensitive inference server (request 30%, limit 60%) under a
 * bursty load beside a training loop (request 40%, limit 100%), run four ways in one go — each on a GPU
 * of its own (Exclusive), sharing one GPU without control, with static shares capped at the request (like
 * MPS), and with Dilu's token manager (Algorithm 2). Every figure is from the emulated GPU.
 *
 * <p>Usage: {@code ColocationBench NATIVE_BUILD_DIR [SECONDS]}.
 */
public final class ColocationBench {

    /** 108 SMs × 5 ms / 100 µs blocks: what the whole emulated GPU runs in one period. */
    private static final long MAX_TOKENS = 5_400;
    private static final double INF_REQUEST = 0.30, INF_LIMIT = 0.60, TRAIN_REQUEST = 0.40, TRAIN_LIMIT = 1.0;

    private final Path nativeDir;
    private final Path work;
    private final int seconds;

    private ColocationBench(Path nativeDir, Path work, int seconds) {
        this.nativeDir = nativeDir;
        this.work = work;
        this.seconds = seconds;
    }

    /** One run: the inference server's latency and the training loop's throughput. */
    public record Outcome(double p95Millis, double p50Millis, double trainBlocksPerSecond) {}

    /** The four runs of one comparison. */
    public record Comparison(Outcome exclusive, Outcome noControl, Outcome staticShares, Outcome dilu) {

        public double p95VsExclusive(Outcome o) {
            return o.p95Millis() / exclusive.p95Millis();
        }

        public double trainingVsExclusive(Outcome o) {
            return o.trainBlocksPerSecond() / exclusive.trainBlocksPerSecond();
        }
    }

    /** Runs the four ways, {@code seconds} each, with the workloads and hook built in {@code nativeDir}. */
    public static Comparison compare(Path nativeDir, int seconds, double etaViolation) throws Exception {
        Path work = Files.createTempDirectory("dilu-colocation-");
        ColocationBench bench = new ColocationBench(nativeDir, work, seconds);
        return new Comparison(bench.run("exclusive", false, false, NONE), bench.run("no-control", false, true, NONE),
                bench.run("static", true, true, STATIC), bench.run("dilu", true, true, dilu(etaViolation)));
    }

    /** Bursty load: 40 rps, with 3-second bursts of 240 rps every 10 seconds. */
    private Path trace() throws IOException {
        List<String> lines = new ArrayList<>();
        for (int s = 0; s < seconds; s++) {
            lines.add(s % 10 >= 5 && s % 10 < 8 ? "240" : "40");
        }
        return Files.write(work.resolve("trace.txt"), lines);
    }

    private Process start(List<String> command, Map<String, String> env, Path out) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile())
                .redirectError(ProcessBuilder.Redirect.appendTo(work.resolve("stderr.log").toFile()));
        pb.environment().putAll(env);
        return pb.start();
    }

    private Outcome run(String mode, boolean hooked, boolean sameGpu, Control control) throws Exception {
        Path dir = Files.createDirectories(work.resolve(mode));
        Path gpuA = Files.createDirectories(dir.resolve("gpu-a"));
        Path gpuB = sameGpu ? gpuA : Files.createDirectories(dir.resolve("gpu-b"));
        ControlBlock inf = ControlBlock.create(dir.resolve("inference"), 1);
        ControlBlock train = ControlBlock.create(dir.resolve("training"), 1);
        long now = System.nanoTime();
        inf.heartbeat(now);
        train.heartbeat(now);
        AutoCloseable agent = control.start(inf, train);
        try {
            Process p1 = start(List.of(nativeDir.resolve("bin/emu-infer").toString(), "--trace", trace().toString(),
                    "--batch", "8", "--max-wait-ms", "4", "--kernels", "20", "--blocks", "108", "--block-us", "100",
                    "--latencies", dir.resolve("latencies.txt").toString()),
                    env(hooked, inf, gpuA), dir.resolve("inference.out"));
            Process p2 = start(List.of(nativeDir.resolve("bin/emu-train").toString(), "--seconds",
                    Integer.toString(seconds), "--kernels", "8", "--blocks", "432", "--block-us", "100", "--gap-ms", "3"),
                    env(hooked, train, gpuB), dir.resolve("training.out"));
            if (!p1.waitFor(seconds + 60L, TimeUnit.SECONDS) || !p2.waitFor(60, TimeUnit.SECONDS)) {
                p1.destroyForcibly();
                p2.destroyForcibly();
                throw new IllegalStateException(mode + ": a workload did not finish");
            }
            if (p1.exitValue() != 0 || p2.exitValue() != 0) {
                throw new IllegalStateException(mode + ": a workload failed, see " + work.resolve("stderr.log"));
            }
        } finally {
            agent.close();
        }
        String infOut = Files.readString(dir.resolve("inference.out"), StandardCharsets.UTF_8);
        String trainOut = Files.readString(dir.resolve("training.out"), StandardCharsets.UTF_8);
        return new Outcome(number(infOut, "p95_ms"), number(infOut, "p50_ms"), number(trainOut, "blocks_per_second"));
    }

    private Map<String, String> env(boolean hooked, ControlBlock block, Path gpu) {
        return hooked
                ? Map.of("LD_PRELOAD", nativeDir.resolve("hook/libdilu-hook.so").toString(),
                        "DILU_CONTROL_DIR", block.directory().toString(), "DILU_EMU_DIR", gpu.toString())
                : Map.of("DILU_EMU_DIR", gpu.toString());
    }

    private static double number(String text, String key) {
        Matcher m = Pattern.compile(key + "=([0-9.]+)").matcher(text);
        if (!m.find()) {
            throw new IllegalStateException("no " + key + " in: " + text);
        }
        return Double.parseDouble(m.group(1));
    }

    /** Who refills the tokens during a run. */
    @FunctionalInterface
    private interface Control {
        AutoCloseable start(ControlBlock inference, ControlBlock training) throws Exception;
    }

    private static final Control NONE = (inf, train) -> () -> { };

    /** Static shares: every period exactly the request, never more (MPS-like). */
    private static final Control STATIC = (inf, train) -> {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        inf.setThrottled(0, true);
        train.setThrottled(0, true);
        timer.scheduleAtFixedRate(() -> {
            long now = System.nanoTime();
            for (Object[] pair : new Object[][] {{inf, INF_REQUEST}, {train, TRAIN_REQUEST}}) {
                ControlBlock b = (ControlBlock) pair[0];
                long tokens = (long) (MAX_TOKENS * (double) pair[1]);
                b.grantTokens(0, Math.min(b.tokensGranted(0), b.blocksLaunched(0)) + tokens);
                b.heartbeat(now);
            }
        }, 0, 5, TimeUnit.MILLISECONDS);
        return () -> {
            timer.shutdownNow();
            timer.awaitTermination(1, TimeUnit.SECONDS);
        };
    };

    private static Control dilu(double etaViolation) {
        return (inf, train) -> {
        TokenManager manager = new TokenManager(1, TokenParameters.DEFAULTS.withMaxTokens(MAX_TOKENS).withEtaViolation(etaViolation),
                InstantSource.system(), 4096);
        manager.gpu(0).add(new Tenant("inference", inf, 0, INF_REQUEST, INF_LIMIT, true));
        manager.gpu(0).add(new Tenant("training", train, 0, TRAIN_REQUEST, TRAIN_LIMIT, false));
        manager.start();
        return manager;
        };
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: ColocationBench NATIVE_BUILD_DIR [SECONDS]");
            System.exit(2);
        }
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        double eta = Double.parseDouble(System.getProperty("dilu.eta", "0.25"));
        Comparison c = compare(Path.of(args[0]), seconds, eta);
        System.out.println("EMULATED GPU (108 SMs), " + seconds + " s per run, η_violation " + eta
                + "; inference p50/p95 ms, training blocks/s:");
        for (Object[] row : new Object[][] {{"exclusive (2 GPUs)", c.exclusive()}, {"shared, no control", c.noControl()},
                {"shared, static shares", c.staticShares()}, {"shared, dilu", c.dilu()}}) {
            Outcome o = (Outcome) row[1];
            System.out.printf(Locale.ROOT, "  %-22s p50 %7.2f  p95 %7.2f  training %10.0f%n", row[0], o.p50Millis(),
                    o.p95Millis(), o.trainBlocksPerSecond());
        }
        System.out.printf(Locale.ROOT, "BENCH colocation inference_p95_vs_exclusive=%.3f training_throughput_vs_exclusive=%.3f"
                        + " static_inference_p95_vs_exclusive=%.3f static_training_throughput_vs_exclusive=%.3f%n",
                c.p95VsExclusive(c.dilu()), c.trainingVsExclusive(c.dilu()), c.p95VsExclusive(c.staticShares()),
                c.trainingVsExclusive(c.staticShares()));
        System.out.printf(Locale.ROOT, "(no control: p95 %.3fx, training %.3fx of exclusive)%n",
                c.p95VsExclusive(c.noControl()), c.trainingVsExclusive(c.noControl()));
    }
}
