package io.dilu.deviceplugin.bench;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.control.FakeHook;
import io.dilu.deviceplugin.tokens.PeriodicWakeups;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.LongStream;

/**
 * The node agent's token manager at scale: 8 GPUs × 16 containers, a 5 ms period, real control blocks on
 * tmpfs. A stand-in for the hooks writes launches and launch cycles into the report pages; only the token
 * threads' CPU time is counted. Prints the lateness of the periods (jitter) and the CPU they cost.
 *
 * <p>It judges itself against the host. The same run times the bare wake-ups — one thread per GPU on the same
 * absolute deadlines, woken by the same code ({@link PeriodicWakeups}), doing nothing — in slices alternated with
 * the token manager's, so that both see the same machine. What the token work costs is the difference: exit 1
 * with a {@code FAIL:} line when it is more than {@value #CPU_BAR_PERCENT}% of a core, or when the token threads'
 * p99 lateness is more than {@value #JITTER_BAR_MS} ms over the bare wake-ups' (the median over pairs of adjacent
 * slices: a host stall lands in one slice, and would otherwise decide the p99 of whichever kind it hit). The bare
 * wake-ups' lateness is the host's ({@code host_late_p99_ms}).
 *
 * <p>Usage: {@code AgentBench [SECONDS | --smoke]}: SECONDS (default 10) of each, {@code --smoke} 2.
 */
public final class AgentBench {

    static final String USAGE = "AgentBench [SECONDS | --smoke]";
    /** The most CPU the token work may cost beyond the bare wake-ups, in percent of one core. */
    static final double CPU_BAR_PERCENT = 5;
    /** The most the token threads' p99 lateness may exceed the bare wake-ups', in ms. */
    static final double JITTER_BAR_MS = 0.5;
    /** How long each of the alternated slices runs. */
    static final long SLICE_MILLIS = 500;
    /** Periods run straight through before anything is timed: the JIT compiles a method after some 10,000 calls. */
    static final int WARM_UP_PERIODS = 20_000;
    static final int GPUS = 8;
    static final int PER_GPU = 16;

    private AgentBench() {}

    /** One slice: the threads' CPU time, the wall time it ran and the lateness of its wake-ups. */
    private record Slice(long cpuNanos, long wallNanos, long[] lateness) {}

    /** The slices of one kind, together. */
    private record Total(double cpuPercent, Lateness lateness) {
        static Total of(List<Slice> slices) {
            long cpu = slices.stream().mapToLong(Slice::cpuNanos).sum();
            long wall = slices.stream().mapToLong(Slice::wallNanos).sum();
            long[] late = slices.stream().flatMapToLong(s -> LongStream.of(s.lateness())).sorted().toArray();
            return new Total(100.0 * cpu / wall, Lateness.of(late));
        }
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(USAGE, args);
        int seconds = parsed.seconds(0, 10, 2);
        TokenParameters params = ColocationBench.shippedParameters();
        int refillSteps = ColocationBench.shippedRefillSteps();
        int samples = Lateness.samplesFor(1);
        Path root = Files.createTempDirectory(Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : "/tmp"),
                "dilu-agent-bench-");
        List<ControlBlock> blocks = new ArrayList<>();
        List<Tenant> tenants = new ArrayList<>();
        for (int g = 0; g < GPUS; g++) {
            for (int c = 0; c < PER_GPU; c++) {
                ControlBlock block = ControlBlock.create(root.resolve("gpu" + g + "-c" + c), 1);
                blocks.add(block);
                tenants.add(new Tenant("gpu" + g + "-c" + c, block, 0, 1.0 / PER_GPU, 2.0 / PER_GPU, c % 2 == 0));
            }
        }
        Supplier<TokenManager> tokens = () -> {
            TokenManager m = new TokenManager(GPUS, params, refillSteps, InstantSource.system(), samples);
            for (int i = 0; i < tenants.size(); i++) {
                m.gpu(i / PER_GPU).add(tenants.get(i));
            }
            return m;
        };
        Supplier<PeriodicWakeups> bare = () -> new PeriodicWakeups("dilu-bare-wakeup", GPUS, params.period(), samples,
                PeriodicWakeups.NOTHING);
        Thread hooks = Thread.ofPlatform().daemon().start(() -> fakeHooks(blocks));
        // Untimed first: periods of every GPU's loop, enough for the JIT to have compiled them, and a slice of each.
        try (TokenManager warm = tokens.get()) {
            for (int i = 0; i < WARM_UP_PERIODS; i++) {
                warm.gpu(i % GPUS).tick(Instant.now(), System.nanoTime());
            }
        }
        slice(tokens.get());
        slice(bare.get());
        System.gc(); // the warm-up's garbage, collected now rather than in a timed slice
        List<Slice> tokenSlices = new ArrayList<>();
        List<Slice> bareSlices = new ArrayList<>();
        for (long ran = 0; ran < seconds * 1000L; ran += SLICE_MILLIS) {
            tokenSlices.add(slice(tokens.get()));
            bareSlices.add(slice(bare.get()));
        }
        hooks.interrupt();
        hooks.join();
        blocks.forEach(ControlBlock::close);
        deleteTree(root); // tmpfs, outside the scratch directory ./dilu removes
        Total token = Total.of(tokenSlices);
        Total host = Total.of(bareSlices);
        double work = token.cpuPercent() - host.cpuPercent();
        List<Double> over = new ArrayList<>();
        for (int i = 0; i < tokenSlices.size(); i++) {
            over.add(Lateness.of(tokenSlices.get(i).lateness()).p99Ms() - Lateness.of(bareSlices.get(i).lateness()).p99Ms());
        }
        double jitterOver = GpuCheck.median(over);
        System.out.printf(Locale.ROOT, "token manager, %d GPUs × %d containers, period %d ms, %d s in %d slices of %d ms,"
                        + " %d periods: lateness %s; token threads %.2f%% of one core%n", GPUS, PER_GPU,
                params.period().toMillis(), seconds, tokenSlices.size(), SLICE_MILLIS, token.lateness().samples(),
                token.lateness(), token.cpuPercent());
        System.out.printf(Locale.ROOT, "bare wake-ups, %d threads doing nothing, the slices in between, %d wake-ups: lateness"
                + " %s (the host's); %.2f%% of one core%n", GPUS, host.lateness().samples(), host.lateness(), host.cpuPercent());
        System.out.printf(Locale.ROOT, "the token work: %.2f%% of one core (bar %.0f); p99 lateness over the bare wake-ups',"
                + " slice by adjacent slice: %s ms, median %+.3f ms (bar %.1f)%n", work, CPU_BAR_PERCENT,
                over.stream().map(d -> String.format(Locale.ROOT, "%+.3f", d)).toList(), jitterOver, JITTER_BAR_MS);
        boolean failed = false;
        if (work > CPU_BAR_PERCENT) {
            failed = true;
            System.out.printf(Locale.ROOT, "FAIL: the token work costs %.2f%% of a core beyond the bare wake-ups' %.2f%%,"
                    + " over the %.0f%% bar%n", work, host.cpuPercent(), CPU_BAR_PERCENT);
        }
        if (jitterOver > JITTER_BAR_MS) {
            failed = true;
            System.out.printf(Locale.ROOT, "FAIL: the token threads' p99 lateness is %.3f ms over the bare wake-ups' (the"
                    + " median over adjacent slices), more than the %.1f ms bar%n", jitterOver, JITTER_BAR_MS);
        }
        System.out.printf(Locale.ROOT, "BENCH agent gpus=%d containers_per_gpu=%d period_ms=%d seconds=%d jitter_p99_ms=%.3f"
                        + " jitter_over_host_ms=%.3f cpu_percent_of_core=%.2f bare_cpu_percent_of_core=%.2f"
                        + " token_work_cpu_percent=%.2f %s%n",
                GPUS, PER_GPU, params.period().toMillis(), seconds, token.lateness().p99Ms(), jitterOver, token.cpuPercent(),
                host.cpuPercent(), work, host.lateness().hostKeys());
        System.exit(failed ? 1 : 0);
    }

    private static Slice slice(TokenManager manager) throws InterruptedException {
        try (manager) {
            return slice(manager::start, manager::threads, manager::sortedLateness);
        }
    }

    private static Slice slice(PeriodicWakeups wakeups) throws InterruptedException {
        try (wakeups) {
            return slice(wakeups::start, wakeups::threads, wakeups::sortedLateness);
        }
    }

    private static Slice slice(Runnable start, Supplier<List<Thread>> threads, Supplier<long[]> lateness)
            throws InterruptedException {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long wallBefore = System.nanoTime();
        start.run();
        Thread.sleep(SLICE_MILLIS);
        long cpu = 0;
        for (Thread t : threads.get()) {
            cpu += Math.max(0, mx.getThreadCpuTime(t.threadId()));
        }
        long wall = System.nanoTime() - wallBefore;
        return new Slice(cpu, wall, lateness.get());
    }

    private static void deleteTree(Path root) throws java.io.IOException {
        try (var all = Files.walk(root)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
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
