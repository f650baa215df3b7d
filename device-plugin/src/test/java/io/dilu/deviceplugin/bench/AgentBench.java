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
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.LongStream;

/**
 * The node agent's token manager at scale: 8 GPUs × 16 containers, a 5 ms period, real control blocks on
 * tmpfs. A stand-in for the hooks writes launches and launch cycles into the report pages; only the token
 * threads' CPU time is counted. Prints the lateness of the periods (jitter) and the CPU they cost.
 *
 * <p>It judges itself against the host. Beside the token threads run the bare wake-ups — one thread per GPU on
 * absolute 5 ms deadlines, woken by the same code ({@link PeriodicWakeups}), doing nothing — half a period out of
 * phase, so that they do not wait for each other's cores and every host stall or GC pause falls on both. The run
 * is cut into slices of {@value #SLICE_MILLIS} ms, each with threads of its own. What the token work costs is the
 * difference: exit 1 with a {@code FAIL:} line when it is more than {@value #CPU_BAR_PERCENT}% of a core, or when
 * the token threads' p99 lateness is more than {@value #JITTER_BAR_MS} ms over the bare wake-ups' (the median over
 * the slices: a long stall releases eight token threads with work to do at once, and would otherwise decide it).
 * The bare wake-ups' lateness is the host's ({@code host_late_p99_ms}).
 *
 * <p>Usage: {@code AgentBench [SECONDS | --smoke]}: SECONDS (default 10), {@code --smoke} 2 (CI's size, as every
 * bench's smoke run too short to judge a timing on a busy machine: it prints the figures and judges no bar).
 */
public final class AgentBench {

    static final String USAGE = "AgentBench [SECONDS | --smoke]";
    /** The most CPU the token work may cost beyond the bare wake-ups, in percent of one core. */
    static final double CPU_BAR_PERCENT = 5;
    /** The most the token threads' p99 lateness may exceed the bare wake-ups', in ms. */
    static final double JITTER_BAR_MS = 0.5;
    /** Periods run straight through before anything is timed: the JIT compiles a method after some 10,000 calls. */
    static final int WARM_UP_PERIODS = 20_000;
    /** How long a slice runs; the first, untimed, lets the JIT compile the threads' own loop too. */
    static final long SLICE_MILLIS = 250;
    static final int GPUS = 8;
    static final int PER_GPU = 16;

    private AgentBench() {}

    /** One slice: the CPU time and the wall time of each set, and how late each woke (nanoseconds, sorted). */
    private record Slice(long tokenCpu, long tokenWall, long[] tokenLate, long bareCpu, long bareWall, long[] bareLate) {
        double p99Over() {
            return Lateness.of(tokenLate).p99Ms() - Lateness.of(bareLate).p99Ms();
        }
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(USAGE, args);
        int seconds = parsed.seconds(0, 10, 2);
        TokenParameters params = ColocationBench.shippedParameters();
        int refillSteps = ColocationBench.shippedRefillSteps();
        // Room for twice a slice's periods (a slice whose end is late keeps its latest): the threads are made afresh for
        // every slice, and records sized for the whole run would be megabytes of garbage a slice.
        int samples = (int) (2 * SLICE_MILLIS * 1_000_000 / params.period().toNanos());
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
        try (TokenManager warm = tokens.get()) {
            for (int i = 0; i < WARM_UP_PERIODS; i++) {
                warm.gpu(i % GPUS).tick(Instant.now(), System.nanoTime());
            }
        }
        slice(tokens.get(), bare.get(), params.period().toNanos());
        List<Slice> slices = new ArrayList<>();
        for (long ran = 0; ran < seconds * 1000L; ran += SLICE_MILLIS) {
            slices.add(slice(tokens.get(), bare.get(), params.period().toNanos()));
        }
        hooks.interrupt();
        hooks.join();
        blocks.forEach(ControlBlock::close);
        deleteTree(root); // tmpfs, outside the scratch directory ./dilu removes
        double tokenCpu = 100.0 * slices.stream().mapToLong(Slice::tokenCpu).sum() / slices.stream().mapToLong(Slice::tokenWall).sum();
        double bareCpu = 100.0 * slices.stream().mapToLong(Slice::bareCpu).sum() / slices.stream().mapToLong(Slice::bareWall).sum();
        Lateness token = Lateness.of(slices.stream().flatMapToLong(sl -> LongStream.of(sl.tokenLate())).sorted().toArray());
        Lateness host = Lateness.of(slices.stream().flatMapToLong(sl -> LongStream.of(sl.bareLate())).sorted().toArray());
        double work = tokenCpu - bareCpu;
        double jitterOver = GpuCheck.median(slices.stream().map(Slice::p99Over).toList());
        System.out.printf(Locale.ROOT, "token manager, %d GPUs × %d containers, period %d ms, %d s in %d slices, %d periods:"
                        + " lateness %s; token threads %.2f%% of one core%n", GPUS, PER_GPU, params.period().toMillis(), seconds,
                slices.size(), token.samples(), token, tokenCpu);
        System.out.printf(Locale.ROOT, "bare wake-ups, %d threads doing nothing half a period out of phase, %d wake-ups:"
                + " lateness %s (the host's); %.2f%% of one core%n", GPUS, host.samples(), host, bareCpu);
        boolean judge = !parsed.smoke();
        System.out.printf(Locale.ROOT, "the token work: %.2f%% of one core (bar %.0f); p99 lateness over the bare wake-ups',"
                + " median of the slices %+.3f ms (bar %.1f)%s%n", work, CPU_BAR_PERCENT, jitterOver, JITTER_BAR_MS,
                judge ? "" : "; not judged in a smoke run");
        boolean failed = false;
        if (judge && work > CPU_BAR_PERCENT) {
            failed = true;
            System.out.printf(Locale.ROOT, "FAIL: the token work costs %.2f%% of a core beyond the bare wake-ups' %.2f%%,"
                    + " over the %.0f%% bar%n", work, bareCpu, CPU_BAR_PERCENT);
        }
        if (judge && jitterOver > JITTER_BAR_MS) {
            failed = true;
            System.out.printf(Locale.ROOT, "FAIL: the token threads' p99 lateness is %.3f ms over the bare wake-ups' (the"
                    + " median of the slices), more than the %.1f ms bar; the host's p99 lateness was %.3f ms%n", jitterOver,
                    JITTER_BAR_MS, host.p99Ms());
        }
        System.out.printf(Locale.ROOT, "BENCH agent gpus=%d containers_per_gpu=%d period_ms=%d seconds=%d jitter_p99_ms=%.3f"
                        + " jitter_over_host_ms=%.3f cpu_percent_of_core=%.2f bare_cpu_percent_of_core=%.2f"
                        + " token_work_cpu_percent=%.2f %s%n",
                GPUS, PER_GPU, params.period().toMillis(), seconds, token.p99Ms(), jitterOver, tokenCpu, bareCpu, work,
                host.hostKeys());
        System.exit(failed ? 1 : 0);
    }

    /** A slice: the token manager and, started half a period after it, the bare wake-ups, together. */
    private static Slice slice(TokenManager manager, PeriodicWakeups bare, long periodNanos) throws InterruptedException {
        try (manager; bare) {
            long tokensStarted = System.nanoTime();
            manager.start();
            long wait;
            while ((wait = tokensStarted + periodNanos / 2 - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            long bareStarted = System.nanoTime();
            bare.start();
            Thread.sleep(SLICE_MILLIS);
            long tokenCpu = cpu(manager.threads());
            long bareCpu = cpu(bare.threads());
            long now = System.nanoTime();
            return new Slice(tokenCpu, now - tokensStarted, manager.sortedLateness(), bareCpu, now - bareStarted,
                    bare.sortedLateness());
        }
    }

    private static long cpu(List<Thread> threads) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long total = 0;
        for (Thread t : threads) {
            total += Math.max(0, mx.getThreadCpuTime(t.threadId()));
        }
        return total;
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
