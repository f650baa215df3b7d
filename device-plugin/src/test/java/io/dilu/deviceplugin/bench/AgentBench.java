package io.dilu.deviceplugin.bench;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.control.FakeHook;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The node agent's token manager at scale: 8 GPUs × 16 containers, a 5 ms period, real control blocks on
 * tmpfs. A stand-in for the hooks writes launches and launch cycles into the report pages; only the token
 * threads' CPU time is counted. Prints the lateness of the periods (jitter) and the CPU they cost.
 *
 * <p>Usage: {@code AgentBench [SECONDS]}.
 */
public final class AgentBench {

    private AgentBench() {}

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        int gpus = 8;
        int perGpu = 16;
        TokenParameters params = ColocationBench.shippedParameters();
        Path root = Files.createTempDirectory(Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : "/tmp"),
                "dilu-agent-bench-");
        List<ControlBlock> blocks = new ArrayList<>();
        try (TokenManager manager = new TokenManager(gpus, params, ColocationBench.shippedRefillSteps(), InstantSource.system(), 1 << 16)) {
            for (int g = 0; g < gpus; g++) {
                for (int c = 0; c < perGpu; c++) {
                    ControlBlock block = ControlBlock.create(root.resolve("gpu" + g + "-c" + c), 1);
                    blocks.add(block);
                    manager.gpu(g).add(new Tenant("gpu" + g + "-c" + c, block, 0, 1.0 / perGpu, 2.0 / perGpu, c % 2 == 0));
                }
            }
            Thread hooks = Thread.ofPlatform().daemon().start(() -> fakeHooks(blocks));
            manager.start();
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long cpuBefore = cpu(mx, manager);
            long wallBefore = System.nanoTime();
            Thread.sleep(seconds * 1000L);
            long cpu = cpu(mx, manager) - cpuBefore;
            long wall = System.nanoTime() - wallBefore;
            hooks.interrupt();
            long[] late = manager.sortedLateness();
            double p50 = late[late.length / 2] / 1e6;
            double p99 = late[(int) (late.length * 0.99)] / 1e6;
            double max = late[late.length - 1] / 1e6;
            double cpuPercent = 100.0 * cpu / wall;
            System.out.printf(Locale.ROOT, "token manager, %d GPUs × %d containers, period %d ms, %d s, %d periods: "
                            + "lateness p50 %.3f ms, p99 %.3f ms, max %.3f ms; token threads %.2f%% of one core%n",
                    gpus, perGpu, params.period().toMillis(), seconds, late.length, p50, p99, max, cpuPercent);
            System.out.printf(Locale.ROOT, "BENCH agent gpus=%d containers_per_gpu=%d period_ms=%d jitter_p99_ms=%.3f "
                    + "cpu_percent_of_core=%.2f%n", gpus, perGpu, params.period().toMillis(), p99, cpuPercent);
        }
    }

    private static long cpu(ThreadMXBean mx, TokenManager manager) {
        long total = 0;
        for (Thread t : manager.threads()) {
            total += Math.max(0, mx.getThreadCpuTime(t.threadId()));
        }
        return total;
    }

    /** Launches and launch cycles, as busy hooks would write them, every millisecond. */
    private static void fakeHooks(List<ControlBlock> blocks) {
        SplittableRandom rnd = new SplittableRandom(7);
        long[] launched = new long[blocks.size()];
        List<FakeHook> hooks = new ArrayList<>();
        try {
            for (ControlBlock b : blocks) {
                hooks.add(FakeHook.of(b));
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        while (!Thread.currentThread().isInterrupted()) {
            for (int i = 0; i < blocks.size(); i++) {
                launched[i] += rnd.nextInt(200);
                hooks.get(i).report(launched[i], rnd.nextInt(20) == 0 ? 5_000_000 + rnd.nextInt(10_000_000) : 0);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
