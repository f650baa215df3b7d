package io.dilu.deviceplugin.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.core.tokens.TokenPlan;
import io.dilu.deviceplugin.agent.Allocation;
import io.dilu.deviceplugin.agent.Allocations;
import io.dilu.deviceplugin.agent.NodeAgentConfig;
import io.dilu.deviceplugin.agent.PodView;
import io.dilu.deviceplugin.agent.TestingBackstop;
import io.dilu.core.backstop.ShareBackstop;
import io.dilu.deviceplugin.backstop.RecordedNvml;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.control.FakeHook;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.ReportReading;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.testing.TestingClock;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Attacks a tenant can make from inside its own GPU container — on the hook, on its control block, on the node
 * agent through its report page — each run for real: the real hook in real processes on the emulated GPU (set up
 * as the kubelet sets up a container, by dilu-contain), the agent's real token loop, allocations and quota rules.
 * Each answers whether the attack was contained, with the attacker's launch rate beside its grant where that is
 * the measure. Shared by {@code NodeIsolationIT} (which asserts) and {@code IsolationBench} (which prints).
 */
public final class NodeAttacks {

    /** What one attack achieved. Rates in thread blocks per second; NaN where rates are not the measure. */
    public record Outcome(String attack, boolean contained, String detail, double attackerBlocksPerSecond,
            double grantBlocksPerSecond) {}

    @FunctionalInterface
    interface Attack {
        Outcome run() throws Exception;
    }

    /** 5,400 blocks per 5 ms for the emulated A100; the tenant's share: 25% (1,350 per period). */
    private static final TokenParameters PARAMS = TokenParameters.DEFAULTS.withMaxTokens(5_400);
    private static final double SHARE = 0.25;

    private final Path nativeDir;
    private final Path work;

    public NodeAttacks(Path nativeDir, Path work) {
        this.nativeDir = nativeDir;
        this.work = work;
    }

    /** Every attack, in a stable order. */
    public List<Outcome> runAll() throws Exception {
        List<Outcome> outcomes = new ArrayList<>();
        for (Map.Entry<String, Attack> a : attacks().entrySet()) {
            try {
                outcomes.add(a.getValue().run());
            } catch (Exception | AssertionError e) {
                outcomes.add(new Outcome(a.getKey(), false, "the attack's run failed: " + e, Double.NaN, Double.NaN));
            }
        }
        return outcomes;
    }

    Map<String, Attack> attacks() {
        Map<String, Attack> all = new java.util.LinkedHashMap<>();
        all.put("tenant-control-dir", () -> throttledRun("tenant-control-dir",
                Map.of("DILU_CONTROL_DIR", forgedBlock().directory().toString())));
        all.put("no-ld-preload-env", () -> throttledRun("no-ld-preload-env", Map.of("LD_PRELOAD", "")));
        all.put("pid-1-in-every-slot", this::pidOneInEverySlot);
        all.put("thirty-third-process", this::thirtyThirdProcess);
        all.put("agent-silent-then-back", this::agentSilentThenBack);
        all.put("memory-beyond-share", this::memoryBeyondShare);
        all.put("array-memory-beyond-share", () -> memoryKind("array-memory-beyond-share", "arrays"));
        all.put("vmm-memory-beyond-share", () -> memoryKind("vmm-memory-beyond-share", "vmm"));
        all.put("graph-every-instantiate-route", () -> chargedAsRun("graph-every-instantiate-route", "graph_paths"));
        all.put("graph-exec-update", () -> chargedAsRun("graph-exec-update", "graph_update"));
        all.put("stream-capture", () -> chargedAsRun("stream-capture", "graph_capture"));
        all.put("graph-memory-nodes", this::graphMemoryNodes);
        all.put("grant-page-writable", () -> refused("grant-page-writable", "--control-writable"));
        all.put("control-block-in-image", () -> refused("control-block-in-image", "--control-copy"));
        all.put("negative-klc-count", this::negativeKlcCount);
        all.put("garbage-report-page", this::garbageReportPage);
        all.put("fake-klcs", this::fakeKlcs);
        all.put("greedy-quotas-without-right", this::greedyQuotasWithoutRight);
        // Issue 45, harm 8: pods bound around dilu-scheduler while the uncovered namespaces' webhook is down.
        all.put("pinned-around-the-scheduler-whole-gpus", () -> pinnedAroundTheScheduler(
                "pinned-around-the-scheduler-whole-gpus", 100, 9));
        all.put("pinned-around-the-scheduler-small-shares", () -> pinnedAroundTheScheduler(
                "pinned-around-the-scheduler-small-shares", 10, 10));
        // Issue 29, cause 3: a user and mount namespace made inside the container (dilu-contain --tenant-userns).
        all.put("userns-forged-grant", this::usernsForgedGrant);
        all.put("userns-forged-grant-runtime-default", () -> usernsUnderRuntimeDefault("userns-forged-grant-runtime-default",
                "grant"));
        all.put("userns-masked-ld-so-preload-runtime-default",
                () -> usernsUnderRuntimeDefault("userns-masked-ld-so-preload-runtime-default", "preload"));
        // Cause 4: a child's memory, booked in its parent's slot, reclaimed with the parent's.
        all.put("fork-child-memory", () -> childMemory("fork-child-memory", "fork"));
        all.put("clone-child-memory", () -> childMemory("clone-child-memory", "clone"));
        // Issue 45, escape 5: a child sharing its parent's address space, whose exit took its memory off the books.
        all.put("clone-vm-child-memory", this::cloneVmChildMemory);
        // Issue 45, escape 3: a parked pod's share when the pod is deleted.
        all.put("parked-pod-deleted", this::parkedPodDeleted);
        // Cause 5: the dynamic loader's routes to libcuda (docs/hook.md, "The dynamic loader").
        all.put("dlopen-deepbind", () -> loaderRoute("dlopen-deepbind", "deepbind", tenantLib("tenant_lib"), 100));
        all.put("symbolic-library-deepbind", () -> loaderRoute("symbolic-library-deepbind", "symbolic",
                tenantLib("tenant_symbolic"), 200));
        all.put("second-libcuda-by-path", this::secondLibcuda);
        all.put("glibc-dlsym-looked-up", this::glibcDlsymLookedUp);
        all.put("dlmopen-own-namespace", this::dlmopenOwnNamespace);
        all.put("ld-audit-module", this::ldAuditModule);
        all.put("ld-preload-libcuda-ahead", () -> aheadOfTheHook("ld-preload-libcuda-ahead",
                nativeDir.resolve("emu/libcuda.so.1"), "cuInit"));
        all.put("ld-preload-shim-ahead", () -> aheadOfTheHook("ld-preload-shim-ahead", tenantLib("tenant_shim"),
                "cuLaunchKernel"));
        all.put("ld-preload-hidden-version-shim-ahead", () -> aheadOfTheHook("ld-preload-hidden-version-shim-ahead",
                tenantLib("tenant_vshim"), "cuLaunchKernel"));
        all.put("ld-preload-filter-ahead", () -> aheadOfTheHook("ld-preload-filter-ahead", tenantLib("tenant_filter"),
                "cuInit"));
        // Cause 7: the backstop, for what gets past the hook.
        all.put("backstop-memory-without-hook", this::backstopMemoryWithoutHook);
        all.put("backstop-launches-without-hook", this::backstopLaunchesWithoutHook);
        all.put("backstop-gpu-without-container", this::backstopGpuWithoutContainer);
        all.put("backstop-sidecar-on-gpu", this::backstopSidecarOnGpu);
        all.put("backstop-pid-reuse", this::backstopPidReuse);
        all.put("backstop-framed-neighbour", this::backstopFramedNeighbour);
        all.put("backstop-state-file-swapped", this::backstopStateFileSwapped);
        // Issue 36: launch entry points the hook did not wrap, and what the backstop let through.
        all.put("legacy-launch-entry-points", this::legacyLaunchEntryPoints);
        all.put("backstop-memory-multiplied-over-processes", this::memoryMultipliedOverProcesses);
        all.put("backstop-compute-masked-by-hooked-launch", this::computeMaskedByHookedLaunch);
        all.put("backstop-dynamic-parallelism", this::dynamicParallelism);
        // Issue 45, escape 4: memory held for less than a round, between the agent's shipped rounds and sweeps.
        // Each burst falls between two rounds (the first round comes as the burster starts).
        all.put("backstop-memory-burst-100ms-a-second", () -> memoryBurst("backstop-memory-burst-100ms-a-second",
                100, 1000, 500));
        all.put("backstop-memory-burst-random-phase", () -> memoryBurst("backstop-memory-burst-random-phase",
                100, 1000, 150 + new java.util.Random().nextInt(700)));
        all.put("backstop-memory-burst-60ms-twice-a-second", () -> memoryBurst(
                "backstop-memory-burst-60ms-twice-a-second", 60, 500, 250));
        // Issue 45, harm 6: NVML's time shares overlap on a GPU that time-slices; the tenant who waited is not ended.
        all.put("backstop-honest-tenant-beside-busy-neighbours", () -> recordedScene(
                "backstop-honest-tenant-beside-busy-neighbours", 40, false));
        all.put("backstop-noisy-neighbour-beside-honest-tenant", () -> recordedScene(
                "backstop-noisy-neighbour-beside-honest-tenant", 10, true));
        return all;
    }

    // ---- helpers ----

    private ControlBlock block(String name) throws IOException {
        ControlBlock b = ControlBlock.create(Files.createTempDirectory(work, name + "-"), 1);
        b.setMemoryLimit(0, 1024L << 20);
        b.heartbeat(System.nanoTime());
        return b;
    }

    /** A block the tenant made itself, granting everything. */
    private ControlBlock forgedBlock() throws IOException {
        ControlBlock b = block("forged");
        b.grantTokens(0, Long.MAX_VALUE / 4);
        b.setThrottled(0, false);
        b.setMemoryLimit(0, Long.MAX_VALUE / 4);
        b.heartbeat(System.nanoTime() + TimeUnit.HOURS.toNanos(1));
        return b;
    }

    private record Run(int exit, String out, String err, double seconds) {}

    private Run contained(ControlBlock block, String mode, Map<String, String> env, String... command) throws Exception {
        return contained(block, mode, List.of(), env, command);
    }

    /** {@code command} in the container, with more of dilu-contain's options (--seccomp, --tenant-userns). */
    private Run contained(ControlBlock block, String mode, List<String> options, Map<String, String> env,
            String... command) throws Exception {
        List<String> full = new ArrayList<>(List.of(nativeDir.resolve("bin/dilu-contain").toString(), mode,
                block.directory().toString(), "--preload", nativeDir.resolve("hook/libdilu-hook.so").toString()));
        full.addAll(options);
        full.add("--");
        if (!env.isEmpty()) {
            full.add("env");
            env.forEach((k, v) -> full.add(v.isEmpty() ? "-u" + k : k + "=" + v));
        }
        full.addAll(List.of(command));
        Path out = Files.createTempFile(work, "out", ".txt");
        Path err = Files.createTempFile(work, "err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(full).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().put("DILU_EMU_DIR", Files.createDirectories(work.resolve("gpu")).toString());
        long t0 = System.nanoTime();
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(full + " did not finish");
        }
        return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8), (System.nanoTime() - t0) / 1e9);
    }

    private String probe() {
        return nativeDir.resolve("tests/hook_probe").toString();
    }

    /** A tenant's library built with the hook's tests (hook-native/tests/tenant_*.c). */
    private Path tenantLib(String name) {
        return nativeDir.resolve("tests/lib" + name + ".so");
    }

    private static long ranBlocks(String out) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("ran_blocks=(\\d+)").matcher(out);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    private static TokenManager agentFor(ControlBlock block, double request, double limit, boolean slo) {
        TokenManager m = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64);
        m.gpu(0).add(new Tenant("t", block, 0, request, limit, slo));
        m.start();
        return m;
    }

    /**
     * A greedy process (zero-length kernels, as fast as it may) beside an agent granting 25% of the GPU: what it
     * launched against what it was granted. Contained within 10% of the grant (the kernel that waits, and what
     * the hook lends itself for the periods a busy machine delays the agent by, paid back).
     */
    private Outcome throttledRun(String name, Map<String, String> env) throws Exception {
        ControlBlock b = block(name);
        Run r;
        long granted;
        try (TokenManager m = agentFor(b, SHARE, SHARE, false)) {
            r = contained(b, "--control", env, probe(), "rate", "1.5", "0");
            granted = b.tokensGranted(0);
        }
        long launched = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && launched > 0 && launched <= granted * 1.1 + 1_000;
        return new Outcome(name, contained, "launched " + launched + " of " + granted + " granted; " + r.err().strip(),
                launched / r.seconds(), granted / r.seconds());
    }

    private Outcome refused(String name, String mode) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, mode, Map.of(), probe(), "init");
        boolean contained = r.out().contains("init=800") && r.err().contains("CUDA is refused");
        return new Outcome(name, contained, r.out().strip() + " / " + r.err().strip(), Double.NaN, Double.NaN);
    }

    // ---- the attacks ----

    private Outcome pidOneInEverySlot() throws Exception {
        ControlBlock b = block("pid1");
        b.grantTokens(0, 1L << 40);
        FakeHook tenant = FakeHook.of(b);
        for (int i = 0; i < ControlBlock.MAX_PROCESSES; i++) {
            tenant.setProcess(i, 1);
        }
        Run r = contained(b, "--control", Map.of(), probe(), "init");
        return new Outcome("pid-1-in-every-slot", r.out().contains("init=800"), r.out().strip(), Double.NaN, Double.NaN);
    }

    private Outcome thirtyThirdProcess() throws Exception {
        ControlBlock b = block("procs");
        b.grantTokens(0, 1L << 40);
        List<Process> holders = new ArrayList<>();
        try {
            for (int i = 0; i < ControlBlock.MAX_PROCESSES; i++) {
                ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(nativeDir, b,
                        List.of(probe(), "alloc", "1", "60000"))).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD);
                pb.environment().put("DILU_EMU_DIR", Files.createDirectories(work.resolve("gpu")).toString());
                holders.add(pb.start());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (occupied(b) < ControlBlock.MAX_PROCESSES && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            Run r = contained(b, "--control", Map.of(), probe(), "init");
            return new Outcome("thirty-third-process", occupied(b) == ControlBlock.MAX_PROCESSES && r.out().contains("init=800"),
                    occupied(b) + " slots held; the 33rd: " + r.out().strip(), Double.NaN, Double.NaN);
        } finally {
            holders.forEach(Process::destroyForcibly);
        }
    }

    private static int occupied(ControlBlock b) {
        int n = 0;
        for (int i = 0; i < ControlBlock.MAX_PROCESSES; i++) {
            n += b.processId(i) > 0 ? 1 : 0;
        }
        return n;
    }

    /** The agent stops for 1.5 s (a restart), then a new one takes the block over. */
    private Outcome agentSilentThenBack() throws Exception {
        ControlBlock b = block("silent");
        ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(nativeDir, b, List.of(probe(), "rate", "4", "0")))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("DILU_EMU_DIR", Files.createDirectories(work.resolve("gpu")).toString());
        long t0 = System.nanoTime();
        Process p;
        try (TokenManager first = agentFor(b, SHARE, SHARE, false)) {
            p = pb.start();
            Thread.sleep(1_000);
        }
        long beforeSilence = b.tokensGranted(0);
        Thread.sleep(1_500);
        long duringSilence = b.blocksLaunched(0);
        long rate = b.tokensPerPeriod(0);
        try (TokenManager second = agentFor(ControlBlock.open(b.directory()), SHARE, SHARE, false)) {
            p.waitFor(60, TimeUnit.SECONDS);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        long launched = b.blocksLaunched(0), granted = b.tokensGranted(0);
        // While silent: at most 200 periods at the last rate beyond the grant; afterwards the grant again.
        boolean contained = duringSilence <= beforeSilence + 200 * rate + 1_000 && launched <= granted * 1.1 + 1_000;
        return new Outcome("agent-silent-then-back", contained, "by the silence's end " + duringSilence + " launched of "
                + beforeSilence + " granted (+" + 200 * rate + " the hook may lend itself); in all " + launched + " of "
                + granted, launched / seconds, granted / seconds);
    }

    private Outcome memoryBeyondShare() throws Exception {
        ControlBlock b = block("memory");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "alloc", "2000", "0");
        return new Outcome("memory-beyond-share", r.out().contains("alloc=2 ") && r.out().contains("total_mib=1024"),
                "2000 MiB against a 1024 MiB share: " + r.out().strip(), Double.NaN, Double.NaN);
    }

    /**
     * CUDA arrays or virtual memory management (cuMemCreate, mapped and released in every order) past a 1024 MiB
     * share: refused with OUT_OF_MEMORY (2), and every byte booked exactly (the probe checks each step).
     */
    private Outcome memoryKind(String name, String mode) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), mode);
        boolean contained = r.exit() == 0 && r.out().contains(mode + ": ok") && r.out().contains("over_share=2")
                && b.memoryUsed(0) == 0;
        return new Outcome(name, contained, lastLine(r.out()) + "; " + (b.memoryUsed(0) >> 20) + " MiB still booked",
                Double.NaN, Double.NaN);
    }

    /**
     * Kernels reached through graphs (every instantiate route, cuGetProcAddress and dlsym included; updated
     * executables; captured streams): the hook charges exactly the blocks the emulated GPU ran.
     */
    private Outcome chargedAsRun(String name, String mode) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), mode);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("ran_blocks=(\\d+)").matcher(r.out());
        long ran = m.find() ? Long.parseLong(m.group(1)) : -1;
        long charged = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && ran > 0 && charged == ran;
        return new Outcome(name, contained, "charged " + charged + " blocks for " + ran + " run: " + r.out().strip(),
                Double.NaN, Double.NaN);
    }

    /**
     * Memory through graphs: memory nodes added directly (every route), recorded by capturing cuMemAllocAsync,
     * or smuggled into a graph past the hook. Refused (801 NOT_SUPPORTED, 900 on a capturing stream), nothing
     * booked or allocated beyond what the process allocated the ordinary way.
     */
    private Outcome graphMemoryNodes() throws Exception {
        ControlBlock b = block("graph-memory");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "graph_memory");
        String out = r.out();
        boolean contained = r.exit() == 0 && out.contains("add=801,801,801,801,801,801,801,801,801 ")
                && out.contains("capture=900,900,900,900,900,900,900,900 ") && out.matches("(?s).*backstop=(801,)*801 .*")
                && out.contains("end_used=0 ")
                && b.memoryUsed(0) == 0;
        return new Outcome("graph-memory-nodes", contained, out.strip(), Double.NaN, Double.NaN);
    }

    // ---- issue 29: user namespaces, process lifecycle, the dynamic loader ----

    /**
     * The tenant makes a user and mount namespace of its own (unshare -Urm, where seccomp allows it) and binds a
     * forged grant page, read-only, over the real one: unlimited tokens, 8,000 MiB on a 1,024 MiB share. The hook
     * refuses CUDA outside the initial user namespace, whatever the page says.
     */
    private Outcome usernsForgedGrant() throws Exception {
        ControlBlock b = block("userns");
        b.grantTokens(0, 1_000);
        List<String> tenant = List.of("--tenant-userns", "grant");
        Run init = contained(b, "--control", tenant, Map.of(), probe(), "init");
        Run alloc = contained(b, "--control", tenant, Map.of(), probe(), "alloc", "8000", "0");
        boolean contained = init.out().contains("init=800") && init.err().contains("not in the initial user namespace")
                && alloc.exit() != 0 && !alloc.out().contains("alloc=0") && b.memoryUsed(0) == 0
                && b.blocksLaunched(0) == 0;
        return new Outcome("userns-forged-grant", contained, init.out().strip() + " / " + lastLine(init.err()) + "; 8,000 "
                + "MiB under the forged page: " + (alloc.out().isBlank() ? lastLine(alloc.err()) : alloc.out().strip()),
                Double.NaN, Double.NaN);
    }

    /** The same under the RuntimeDefault seccomp profile the webhook gives GPU pods: the namespace is refused. */
    private Outcome usernsUnderRuntimeDefault(String name, String what) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1_000);
        Run r = contained(b, "--control", List.of("--seccomp", "runtime-default", "--tenant-userns", what), Map.of(),
                probe(), "launch", "5000");
        boolean contained = r.exit() == 125 && r.out().isBlank()
                && r.err().contains("unshare(CLONE_NEWUSER | CLONE_NEWNS) was refused: Operation not permitted");
        return new Outcome(name, contained, "exit " + r.exit() + ": " + r.err().strip(), Double.NaN, Double.NaN);
    }

    /**
     * A process holding 200 MiB makes a child (fork, or the clone system call, which runs no fork handlers) that
     * sets CUDA up anew and allocates 800 MiB, and exits. Its slot is reclaimed with its own 200 MiB only: the next
     * process cannot take 1,000 MiB of the 1,024 MiB share while the child holds its 800.
     */
    private Outcome childMemory(String name, String how) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1L << 40);
        Run forked = contained(b, "--control", Map.of(), probe(), "fork", how, "60000");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("parent=(-?\\d+) child=(-?\\d+) child_pid=(\\d+)")
                .matcher(forked.out());
        if (!m.find()) {
            return new Outcome(name, false, "the probe did not report: " + forked.out() + forked.err(), Double.NaN,
                    Double.NaN);
        }
        long child = Long.parseLong(m.group(3));
        try {
            long beforeReclaim = b.memoryUsed(0);
            Run next = contained(b, "--control", Map.of(), probe(), "alloc", "1000", "0");
            long afterReclaim = b.memoryUsed(0);
            boolean contained = m.group(1).equals("0") && m.group(2).equals("0") && beforeReclaim == 1000L << 20
                    && next.out().contains("alloc=2 free_mib=224") && afterReclaim == 800L << 20;
            return new Outcome(name, contained, "parent 200 MiB, child 800 MiB, " + (beforeReclaim >> 20)
                    + " MiB booked; the parent gone, 1,000 MiB more: " + next.out().strip() + "; " + (afterReclaim >> 20)
                    + " MiB booked (the child's)", Double.NaN, Double.NaN);
        } finally {
            ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    /**
     * A child made by clone(CLONE_VM | CLONE_FILES) allocates 900 MiB in its parent's context and exits; the parent
     * holds its own 200 MiB and the child's 900 of a 2,048 MiB share. Contained: the 1,100 MiB stay booked, and the next
     * process is refused 1,000 MiB while the parent lives (before: the child's 900 MiB came off the books at its exit,
     * and 1,801 MiB were held on a 1,024 MiB share).
     */
    private Outcome cloneVmChildMemory() throws Exception {
        ControlBlock b = block("clone-vm-child-memory");
        b.grantTokens(0, 1L << 40);
        b.setMemoryLimit(0, 2048L << 20);
        Path out = Files.createTempFile(work, "clone-vm", ".txt");
        ProcessBuilder pb = new ProcessBuilder(nativeDir.resolve("bin/dilu-contain").toString(), "--control",
                b.directory().toString(), "--preload", nativeDir.resolve("hook/libdilu-hook.so").toString(), "--",
                probe(), "fork", "clone-vm", "60000").redirectOutput(out.toFile())
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("DILU_EMU_DIR", Files.createDirectories(work.resolve("gpu")).toString());
        Process parent = pb.start();
        try {
            for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    !Files.readString(out).contains("child_pid=") && parent.isAlive() && System.nanoTime() < deadline; ) {
                Thread.sleep(20);
            }
            String report = Files.readString(out).strip();
            long booked = b.memoryUsed(0);
            Run next = contained(b, "--control", Map.of(), probe(), "alloc", "1000", "0");
            boolean contained = report.contains("parent=0 child=0") && booked == 1100L << 20
                    && next.out().contains("alloc=2 ");
            return new Outcome("clone-vm-child-memory", contained, report + "; " + (booked >> 20) + " MiB booked after "
                    + "the child left; 1,000 MiB more: " + next.out().strip(), Double.NaN, Double.NaN);
        } finally {
            parent.destroyForcibly();
            parent.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** One of the loader's scope rules (probe "scope"): every block the emulated GPU ran is charged. */
    private Outcome loaderRoute(String name, String route, Path library, long blocks) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "scope", route, library.toString());
        long ran = ranBlocks(r.out()), charged = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && r.out().contains(route + "=0 ") && ran == blocks && charged == ran;
        return new Outcome(name, contained, "charged " + charged + " blocks for " + ran + " run: " + r.out().strip(),
                Double.NaN, Double.NaN);
    }

    /** A second copy of libcuda loaded by its path, the driver's functions looked up in it. */
    private Outcome secondLibcuda() throws Exception {
        Path copy = Files.createDirectories(Files.createTempDirectory(work, "copy-")).resolve("libcuda.so.1");
        Files.copy(nativeDir.resolve("emu/libcuda.so.1"), copy);
        Outcome o = loaderRoute("second-libcuda-by-path", "copy", copy, 300);
        return new Outcome(o.attack(), o.contained() && o.detail().contains("hook=1"), o.detail(), Double.NaN, Double.NaN);
    }

    /**
     * glibc's own dlsym, looked up through dlsym from libc's handle, would answer libcuda's real functions: the hook
     * answers with its own (and dlvsym, dlopen, dlmopen), glibc's private loader entry points with nothing.
     */
    private Outcome glibcDlsymLookedUp() throws Exception {
        ControlBlock b = block("lookup");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "lookup");
        long ran = ranBlocks(r.out()), charged = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && r.out().contains("dlsym_is_hook=1 loaders_are_hook=1 private_found=0 launch=0")
                && ran == 100 && charged == ran;
        return new Outcome("glibc-dlsym-looked-up", contained, "charged " + charged + " of " + ran + ": " + r.out().strip(),
                Double.NaN, Double.NaN);
    }

    /** A library opened into a link-map namespace of its own (no preload there), which would run 1,000 blocks. */
    private Outcome dlmopenOwnNamespace() throws Exception {
        ControlBlock b = block("dlmopen");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "dlmopen", tenantLib("tenant_lib").toString());
        long ran = ranBlocks(r.out()), charged = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && r.out().contains("newlm=refused via_dlsym=refused own_run=500") && ran == 50
                && charged == ran;
        return new Outcome("dlmopen-own-namespace", contained, r.out().strip(), Double.NaN, Double.NaN);
    }

    /** An audit module (LD_AUDIT), which may rebind any of the program's bindings past the hook. */
    private Outcome ldAuditModule() throws Exception {
        ControlBlock b = block("audit");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of("LD_AUDIT", tenantLib("tenant_audit").toString()), probe(), "launch",
                "5000");
        boolean stopped = r.exit() == 127 && r.out().isBlank() && r.err().contains("an audit module");
        boolean refused = r.exit() != 0 && r.err().contains("audit module") && r.err().contains("CUDA is refused");
        return new Outcome("ld-audit-module", (stopped || refused) && b.blocksLaunched(0) == 0,
                "exit " + r.exit() + ": " + lastLine(r.err()), Double.NaN, Double.NaN);
    }

    /** A library defining the driver's functions preloaded ahead of the hook (the environment's LD_PRELOAD). */
    private Outcome aheadOfTheHook(String name, Path library, String function) throws Exception {
        ControlBlock b = block(name);
        b.grantTokens(0, 1_000);
        Run r = contained(b, "--control", Map.of("LD_PRELOAD", library.toString()), probe(), "launch", "5000");
        boolean contained = r.exit() == 127 && r.out().isBlank() && r.err().contains("defines the driver's " + function)
                && b.blocksLaunched(0) == 0;
        return new Outcome(name, contained, "exit " + r.exit() + ": " + r.err().strip(), Double.NaN, Double.NaN);
    }

    private static String lastLine(String out) {
        String[] lines = out.strip().split("\n");
        return lines[lines.length - 1];
    }

    /** Two tenants on one GPU: the attacker's page is garbage; the neighbour's grants and the loop go on. */
    private Outcome poisonedNeighbour(String name, java.util.function.Consumer<FakeHook> poison) throws Exception {
        ControlBlock attacker = block(name + "-attacker");
        ControlBlock victim = block(name + "-victim");
        try (TokenManager m = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64)) {
            m.gpu(0).add(new Tenant("attacker", attacker, 0, 0.3, 0.6, true));
            m.gpu(0).add(new Tenant("victim", victim, 0, 0.4, 0.8, false));
            FakeHook a = FakeHook.of(attacker);
            FakeHook v = FakeHook.of(victim);
            m.start();
            long launched = 0;
            long start = victim.tokensGranted(0);
            for (int i = 0; i < 200; i++) {
                poison.accept(a);
                launched += 100;
                v.report(launched, 0);
                Thread.sleep(2);
            }
            long grown = victim.tokensGranted(0) - start;
            long faults = 0;
            for (ReportReading.Fault f : ReportReading.Fault.values()) {
                faults += m.gpu(0).faults(f);
            }
            boolean live = System.nanoTime() - m.gpu(0).lastTickNanos() < TimeUnit.SECONDS.toNanos(1);
            TokenPlan last = m.gpu(0).lastPlan();
            boolean contained = grown > 0 && live && faults > 0 && last != null && last.tokensOf("victim") > 0;
            return new Outcome(name, contained, "victim's grant grew by " + grown + ", " + faults
                    + " faults counted, loop live " + live, Double.NaN, Double.NaN);
        }
    }

    private Outcome negativeKlcCount() throws Exception {
        return poisonedNeighbour("negative-klc-count", a -> a.setKlcCount(-5));
    }

    private Outcome garbageReportPage() throws Exception {
        long[] step = {0};
        return poisonedNeighbour("garbage-report-page", a -> {
            step[0]++;
            a.setBlocksLaunched(step[0] % 2 == 0 ? Long.MAX_VALUE : -1);
            a.setKlcCount(step[0] * 1_000_003L);
            a.fillKlcRing(step[0] % 3 == 0 ? -1 : Long.MAX_VALUE);
        });
    }

    /** An SLO tenant reports stretched cycles without end; its best-effort neighbour keeps half its request. */
    private Outcome fakeKlcs() throws Exception {
        ControlBlock liar = block("liar");
        ControlBlock neighbour = block("neighbour");
        double request = 0.5;
        try (TokenManager m = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64)) {
            m.gpu(0).add(new Tenant("liar", liar, 0, 0.3, 0.6, true));
            m.gpu(0).add(new Tenant("neighbour", neighbour, 0, request, 1.0, false));
            FakeHook l = FakeHook.of(liar);
            FakeHook n = FakeHook.of(neighbour);
            m.start();
            l.report(100, 10_000_000); // its best: 10 ms, seen by the agent before the lies start
            for (int i = 0; i < 100 && m.gpu(0).lastPlan() == null; i++) {
                Thread.sleep(5);
            }
            Thread.sleep(20);
            long launched = 0, liarLaunched = 100, sum = 0, periods = 0;
            for (int i = 0; i < 1_500; i++) { // 3 s of lies
                liarLaunched += 100;
                l.report(liarLaunched, 40_000_000);
                launched += 5_000;
                n.report(launched, 0);
                TokenPlan plan = m.gpu(0).lastPlan();
                if (plan != null && i >= 500) { // after the guarantee window has filled with lies
                    sum += plan.tokensOf("neighbour");
                    periods++;
                }
                Thread.sleep(2);
            }
            double average = periods == 0 ? 0 : (double) sum / periods;
            double floor = 0.5 * request * PARAMS.maxTokens();
            long emergencies = m.gpu(0).periods(io.dilu.core.tokens.ControllerState.EMERGENCY);
            // The lies did push the neighbour down (emergencies were declared); the guarantee bounded how far.
            return new Outcome("fake-klcs", emergencies > 100 && average >= floor * 0.9 && average < request * PARAMS.maxTokens(),
                    String.format(java.util.Locale.ROOT, "%d emergency periods declared on lies; the neighbour's average "
                            + "grant %.0f tokens per period against a guaranteed %.0f (half its request)",
                            emergencies, average, floor), Double.NaN, Double.NaN);
        }
    }

    // ---- what goes around the hook: the node's backstop (docs/node-agent.md, "The backstop") ----

    private static final long MIB = 1L << 20;
    /** The backstop as the agent ships it, for rounds on a clock the bench moves (NVML replayed: no waiting). */
    private static final NodeAgentConfig.BackstopConfig SHIPPED = TestingBackstop.shipped(Map.of());
    /** The agent's bounds but for a 2 s window and a 1 s grace, so that the bench waits seconds, not tens of them. */
    private static final ShareBackstop.Bounds BOUNDS = TestingBackstop.shipped(Map.of(
            "dilu.agent.backstop.sm-window", "2s", "dilu.agent.backstop.unknown-grace", "1s")).bounds();
    private static final int ROUNDS_TO_END = SHIPPED.killComputeAfterRounds();

    private TestingBackstop node(String name) throws IOException {
        return new TestingBackstop(Files.createTempDirectory(work, name + "-"), BOUNDS, true);
    }

    /** The probe, run straight on the emulated GPU: no dilu-contain, no preload, no hook. */
    private List<String> unhooked(String... args) {
        List<String> command = new ArrayList<>(List.of(probe()));
        command.addAll(List.of(args));
        return command;
    }

    /** Rounds every 200 ms until {@code done} holds of the faults so far, for at most {@code seconds}. */
    private static List<ShareBackstop.Fault> rounds(TestingBackstop node, double seconds,
            java.util.function.Predicate<List<ShareBackstop.Fault>> done) throws InterruptedException {
        List<ShareBackstop.Fault> seen = new ArrayList<>();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < deadline && !done.test(seen)) {
            seen.addAll(node.round());
            Thread.sleep(200);
        }
        return seen;
    }

    private static long events(TestingBackstop node, String reason, String pod) {
        return node.events().stream().filter(e -> reason.equals(e.getReason())
                && pod.equals(e.getInvolvedObject().getName())).count();
    }

    /**
     * A tenant process the hook never loaded into (as after hiding /etc/ld.so.preload in a user namespace) takes
     * 4,000 MiB on a 1,024 MiB share, beside a process of the same container within it: the backstop ends the
     * first, leaves the second, tells the pod.
     */
    private Outcome backstopMemoryWithoutHook() throws Exception {
        try (TestingBackstop node = node("bs-memory")) {
            TestingBackstop.Container c = node.pod("tenant", "greedy", 1, 25, 1024, "c0").getFirst();
            Process within = node.start(Optional.of(c), unhooked("alloc", "300", "60000"));
            Process attacker = node.start(Optional.of(c), unhooked("alloc", "4000", "60000"));
            long t0 = System.nanoTime();
            rounds(node, 30, f -> !attacker.isAlive());
            double seconds = (System.nanoTime() - t0) / 1e9;
            boolean ended = attacker.waitFor(5, TimeUnit.SECONDS) && attacker.exitValue() == 128 + 9;
            boolean contained = ended && within.isAlive() && events(node, "DiluShareExceeded", "greedy") == 1
                    && node.counter("dilu_backstop_kills_total", "outcome", "killed") == 1;
            return new Outcome("backstop-memory-without-hook", contained, String.format(Locale.ROOT,
                    "4000 MiB on a 1024 MiB share without the hook: %s after %.1f s; the container's 300 MiB process %s",
                    ended ? "ended (SIGKILL)" : "NOT ended", seconds, within.isAlive() ? "left running" : "ended too"),
                    Double.NaN, Double.NaN);
        }
    }

    /**
     * Kernels of zero time launched as fast as a process can, without the hook, on a 10% share: reported (an Event
     * and the metric) within the window, the process left running (an emulated GPU's SM figures are its tenants' to
     * write: reported, never acted on).
     */
    private Outcome backstopLaunchesWithoutHook() throws Exception {
        try (TestingBackstop node = node("bs-launches")) {
            TestingBackstop.Container c = node.pod("tenant", "launcher", 1, 10, 1024, "c0").getFirst();
            Process attacker = node.start(Optional.of(c), unhooked("rate", "10", "0"));
            List<ShareBackstop.Fault> faults = rounds(node, 15, f -> f.stream().anyMatch(ShareBackstop.SmExcess.class::isInstance));
            Optional<ShareBackstop.SmExcess> sm = faults.stream().filter(ShareBackstop.SmExcess.class::isInstance)
                    .map(ShareBackstop.SmExcess.class::cast).findFirst();
            double capacity = PARAMS.maxTokens() * (1e9 / PARAMS.period().toNanos());
            boolean contained = sm.isPresent() && events(node, "DiluShareExceeded", "launcher") == 1
                    && node.counter("dilu_container_share_violations_total", "kind", "sm") == 1;
            attacker.destroyForcibly();
            return new Outcome("backstop-launches-without-hook", contained, sm.map(s -> String.format(Locale.ROOT,
                    "reported: %.0f× the GPU's block capacity against a 10%% limit (at fault above %.1f%%)", s.share(),
                    100 * s.bound())).orElse("NOT reported"), sm.map(s -> s.share() * capacity).orElse(Double.NaN),
                    0.10 * capacity);
        }
    }

    /** A process on the GPU in no container (another door to the GPU, or a host process): reported. */
    private Outcome backstopGpuWithoutContainer() throws Exception {
        try (TestingBackstop node = node("bs-stray")) {
            node.pod("tenant", "owner", 1, 25, 1024, "c0");
            Process stray = node.start(Optional.empty(), unhooked("alloc", "512", "60000"));
            List<ShareBackstop.Fault> faults = rounds(node, 15, f -> f.stream()
                    .anyMatch(x -> x instanceof ShareBackstop.UnknownProcess u && u.process().pid() == stray.pid()));
            boolean contained = !faults.isEmpty()
                    && node.counter("dilu_container_share_violations_total", "kind", "unknown-process") == 1;
            return new Outcome("backstop-gpu-without-container", contained, contained
                    ? "pid " + stray.pid() + " of no container reported after the grace, 512 MiB held" : "NOT reported",
                    Double.NaN, Double.NaN);
        }
    }

    /** A sidecar of a pod with a share reaches the GPU (e.g. by NVIDIA_VISIBLE_DEVICES=all): reported on the pod. */
    private Outcome backstopSidecarOnGpu() throws Exception {
        try (TestingBackstop node = node("bs-sidecar")) {
            List<TestingBackstop.Container> pod = node.pod("tenant", "with-sidecar", 1, 25, 1024, "c0", "sidecar");
            Process sidecar = node.start(Optional.of(pod.get(1)), unhooked("alloc", "256", "60000"));
            List<ShareBackstop.Fault> faults = rounds(node, 15, f -> f.stream()
                    .anyMatch(x -> x instanceof ShareBackstop.UnknownProcess u && u.owner().isPresent()));
            boolean contained = !faults.isEmpty() && events(node, "DiluGpuWithoutShare", "with-sidecar") == 1;
            sidecar.destroyForcibly();
            return new Outcome("backstop-sidecar-on-gpu", contained, contained
                    ? "the sidecar's process reported on its pod (DiluGpuWithoutShare)" : "NOT reported", Double.NaN, Double.NaN);
        }
    }

    /**
     * The process at fault ends and its pid goes to an innocent process before the kill: the kill must not reach it.
     * Reuse is stood for by the kill's evidence — pid and start time, container — naming the innocent's pid with the
     * start time the offender had, and with another container.
     */
    private Outcome backstopPidReuse() throws Exception {
        try (TestingBackstop node = node("bs-reuse")) {
            List<TestingBackstop.Container> pod = node.pod("tenant", "reuse", 0, 10, 1024, "offender", "innocent");
            Process offender = node.start(Optional.of(pod.get(0)), List.of("sleep", "60"));
            Process innocent = node.start(Optional.of(pod.get(1)), List.of("sleep", "60"));
            long offenderStart = node.proc().startTicks(offender.pid()).orElseThrow();
            long innocentStart = node.proc().startTicks(innocent.pid()).orElseThrow();
            offender.destroyForcibly().waitFor();
            var killer = node.killer();
            var sameStartOtherTime = killer.kill(innocent.pid(), offenderStart == innocentStart ? innocentStart + 1
                    : offenderStart, Optional.of(pod.get(1).id()));
            var otherContainer = killer.kill(innocent.pid(), innocentStart, Optional.of(pod.get(0).id()));
            var gone = killer.kill(offender.pid(), offenderStart, Optional.of(pod.get(0).id()));
            boolean contained = innocent.isAlive() && sameStartOtherTime == io.dilu.deviceplugin.backstop.ProcessKiller.Outcome.GONE
                    && otherContainer == io.dilu.deviceplugin.backstop.ProcessKiller.Outcome.GONE
                    && gone == io.dilu.deviceplugin.backstop.ProcessKiller.Outcome.GONE;
            return new Outcome("backstop-pid-reuse", contained, "pid reused by another process: " + sameStartOtherTime.label()
                    + "; pid now in another container: " + otherContainer.label() + "; the offender, ended: " + gone.label()
                    + "; innocent " + (innocent.isAlive() ? "alive" : "KILLED"), Double.NaN, Double.NaN);
        }
    }

    /**
     * A tenant writes its neighbour's slot in the emulated GPU's shared state — 30 GiB of memory — to have the
     * backstop end the neighbour. The backstop reads memory from the kernel's maps of each process, not from the
     * slots: the neighbour stays.
     */
    private Outcome backstopFramedNeighbour() throws Exception {
        try (TestingBackstop node = node("bs-framed")) {
            TestingBackstop.Container victim = node.pod("tenant", "victim", 1, 25, 1024, "c0").getFirst();
            node.pod("tenant", "framer", 1, 25, 1024, "c0");
            Process v = node.start(Optional.of(victim), unhooked("alloc", "100", "60000"));
            rounds(node, 10, f -> node.followed() > 0);
            boolean forged = forgeSlotMemory(node.gpuDir(), v.pid(), 30L << 30);
            List<ShareBackstop.Fault> faults = rounds(node, 3, f -> false);
            boolean framed = faults.stream().anyMatch(ShareBackstop.MemoryExcess.class::isInstance);
            boolean contained = forged && v.isAlive() && !framed;
            return new Outcome("backstop-framed-neighbour", contained, (forged ? "victim's slot set to 30 GiB" : "could NOT forge")
                    + "; memory fault " + (framed ? "RAISED" : "not raised") + "; victim " + (v.isAlive() ? "alive" : "KILLED"),
                    Double.NaN, Double.NaN);
        }
    }

    /** Writes {@code bytes} as device 0's memory of the slot of {@code pid} in every state file of {@code dir}. */
    private static boolean forgeSlotMemory(Path dir, long pid, long bytes) throws IOException {
        boolean done = false;
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                try (var ch = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.READ,
                        java.nio.file.StandardOpenOption.WRITE)) {
                    java.nio.ByteBuffer h = java.nio.ByteBuffer.allocate(48).order(java.nio.ByteOrder.nativeOrder());
                    ch.read(h, 0);
                    int offset = h.getInt(32), size = h.getInt(36), procs = h.getInt(40);
                    for (int i = 0; i < procs; i++) {
                        java.nio.ByteBuffer slot = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.nativeOrder());
                        ch.read(slot, offset + (long) i * size);
                        if (slot.getInt(0) == pid) {
                            java.nio.ByteBuffer m = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
                            m.putLong(0, bytes);
                            ch.write(m, offset + (long) i * size + 40);
                            done = true;
                        }
                    }
                }
            }
        }
        return done;
    }

    /**
     * A tenant hides the GPU's state from the agent: moves the state file into a directory of its own, puts a link to
     * another file and a FIFO where it was. The agent follows neither, does not block, and still finds a process past
     * its share on the moved state by the file's inode, which it remembers, and ends it.
     */
    private Outcome backstopStateFileSwapped() throws Exception {
        try (TestingBackstop node = node("bs-swapped")) {
            TestingBackstop.Container c = node.pod("tenant", "hider", 1, 25, 1024, "c0").getFirst();
            Process holder = node.start(Optional.of(c), unhooked("alloc", "64", "60000"));
            rounds(node, 10, f -> node.followed() > 0);
            Path state;
            try (var files = Files.list(node.gpuDir())) {
                state = files.filter(f -> f.getFileName().toString().startsWith("dilu-emu-gpu-")).findFirst().orElseThrow();
            }
            // Out of the directory the agent lists, into one of the tenant's own inside it (it can write there).
            Path side = Files.createDirectories(node.gpuDir().resolve("side"));
            Files.move(state, side.resolve(state.getFileName()));
            // A link to a file outside the directory (standing for a host file: the agent must not read through it).
            Path decoy = Files.writeString(work.resolve("decoy-" + System.nanoTime()), "not a GPU");
            Files.createSymbolicLink(state, decoy);
            Process mkfifo = new ProcessBuilder("mkfifo", node.gpuDir().resolve("dilu-emu-gpu-99999").toString()).start();
            mkfifo.waitFor(10, TimeUnit.SECONDS);
            // The process past its share attaches to the moved state.
            Process attacker = node.startIn(side, Optional.of(c), unhooked("alloc", "4000", "60000"));
            long t0 = System.nanoTime();
            List<ShareBackstop.Fault> faults = rounds(node, 20, f -> !attacker.isAlive());
            double longest = node.longestRoundSeconds();
            boolean ended = attacker.waitFor(5, TimeUnit.SECONDS) && attacker.exitValue() == 128 + 9;
            boolean contained = ended && holder.isAlive() && longest < 2 && Files.readString(decoy).equals("not a GPU");
            return new Outcome("backstop-state-file-swapped", contained, String.format(Locale.ROOT,
                    "state moved away, a link to another file and a FIFO in its place: the 4000 MiB process %s after %.1f s; "
                            + "longest round %.2f s; %d fault(s)", ended ? "ended" : "NOT ended",
                    (System.nanoTime() - t0) / 1e9, longest, faults.size()), Double.NaN, Double.NaN);
        }
    }

    // ---- issue 36 ----

    /**
     * CUDA 2.0's launches (cuLaunch, cuLaunchGrid, cuLaunchGridAsync), each called directly, through dlsym on the driver
     * and through cuGetProcAddress: charged exactly the blocks the emulated GPU ran. cuLaunchCooperativeKernelMultiDevice
     * by every route, the 32-bit allocations, sparse array mappings and multicast objects: refused, nothing run or booked.
     */
    private Outcome legacyLaunchEntryPoints() throws Exception {
        ControlBlock b = block("legacy");
        b.grantTokens(0, 1L << 40);
        Run r = contained(b, "--control", Map.of(), probe(), "legacy");
        long ran = ranBlocks(r.out()), charged = b.blocksLaunched(0);
        boolean contained = r.exit() == 0 && ran == 3 * (1 + 10 * 20 + 7 * 3) && charged == ran
                && r.out().contains("bad_grid=1,1 multi_device=801,801,801 refused=801,801,801,801,801 ")
                && b.memoryUsed(0) == 0;
        return new Outcome("legacy-launch-entry-points", contained, "charged " + charged + " blocks for " + ran + " run: "
                + r.out().strip(), Double.NaN, Double.NaN);
    }

    /**
     * Eight processes without the hook hold 1,000 MiB each on a 1,024 MiB share (before: 8,000 MiB held, nothing ended,
     * the allowance being per process). One context allowance per container: seven are ended, the one left is within
     * share + allowance.
     */
    private Outcome memoryMultipliedOverProcesses() throws Exception {
        try (TestingBackstop node = node("bs-multiplied")) {
            TestingBackstop.Container c = node.pod("tenant", "multiplied", 1, 25, 1024, "c0").getFirst();
            List<Process> eight = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                eight.add(node.start(Optional.of(c), unhooked("alloc", "1000", "60000")));
            }
            long t0 = System.nanoTime();
            List<ShareBackstop.Fault> faults = rounds(node, 30, f -> killed(node) >= 7);
            double seconds = (System.nanoTime() - t0) / 1e9;
            for (Process p : eight) {
                p.waitFor(5, TimeUnit.SECONDS);
            }
            node.round();
            long left = eight.stream().filter(Process::isAlive).count();
            long ended = eight.stream().filter(p -> !p.isAlive() && p.exitValue() == 128 + 9).count();
            long held = faults.stream().filter(ShareBackstop.MemoryExcess.class::isInstance)
                    .mapToLong(f -> ((ShareBackstop.MemoryExcess) f).heldBytes()).max().orElse(0);
            boolean contained = left == 1 && ended == 7 && killed(node) == 7
                    && events(node, "DiluShareExceeded", "multiplied") >= 1;
            return new Outcome("backstop-memory-multiplied-over-processes", contained, String.format(Locale.ROOT,
                    "8 processes without the hook, 1000 MiB each, on a 1024 MiB share (at most %d MiB seen held): %d "
                            + "ended (SIGKILL) within %.1f s, %d left within share + one %d MiB context allowance",
                    held / MIB, ended, seconds, left, ShareBackstop.CONTEXT_ALLOWANCE_MIB), Double.NaN, Double.NaN);
        }
    }

    private static double killed(TestingBackstop node) {
        return node.counter("dilu_backstop_kills_total", "outcome", "killed");
    }

    /**
     * Kernels launched past the hook keep the GPU busy — NVML's answers for them replayed from the H100
     * (docs/gpu/h100-nvml-backstop-2026-11-26.txt: 528-block kernels, 2 ms on, 6 ms off) — while the hook counts a
     * 26-block launch every 200 ms, on a 10% grant; beside it a container granted 60%, busy the same way. Before, one
     * launch seen masked everything; now the masked container's process is ended after its rounds at fault.
     */
    private Outcome computeMaskedByHookedLaunch() throws Exception {
        return busyBeyondGrant("backstop-compute-masked-by-hooked-launch", RecordedNvml.Role.WIDE_KERNELS_QUARTER_TIME,
                10, 5 * 26, true);
    }

    /**
     * Dynamic parallelism: a kernel launches kernels on the GPU, which never pass through the hook; it charges the
     * parent's one block a second while NVML sees the GPU kept busy (replayed from the H100: kernels filling every SM,
     * back to back), on a 25% grant. Bounded by the same rule: ended after its rounds at fault.
     */
    private Outcome dynamicParallelism() throws Exception {
        return busyBeyondGrant("backstop-dynamic-parallelism", RecordedNvml.Role.WIDE_KERNELS, 25, 1, false);
    }

    /**
     * A container granted {@code percent} whose process NVML reports busy as the recording's {@code role}, its hook
     * counting {@code perRound} blocks a round; with a 60% neighbour busy the same way when {@code neighbour}. Rounds a
     * second apart on the bench's clock, at the agent's shipped bounds.
     */
    private Outcome busyBeyondGrant(String name, RecordedNvml.Role role, int percent, long perRound, boolean neighbour)
            throws Exception {
        TestingClock clock = new TestingClock(Instant.parse("2026-11-26T12:00:00Z"));
        RecordedNvml nvml = RecordedNvml.load(clock);
        try (TestingBackstop node = TestingBackstop.overRecordedNvml(Files.createTempDirectory(work, name + "-"),
                SHIPPED.bounds(), ROUNDS_TO_END, nvml, clock)) {
            TestingBackstop.Container c = node.pod("tenant", "attacker", 1, percent, 1024, "c0").getFirst();
            Optional<TestingBackstop.Container> other = neighbour
                    ? Optional.of(node.pod("tenant", "neighbour", 1, 60, 1024, "c0").getFirst()) : Optional.empty();
            Process attacker = node.start(Optional.of(c), List.of("sleep", "600"));
            nvml.assign(attacker.pid(), role);
            Optional<Process> beside = Optional.empty();
            if (other.isPresent()) {
                beside = Optional.of(node.start(other, List.of("sleep", "600")));
                nvml.assign(beside.get().pid(), role);
            }
            List<ShareBackstop.Fault> faults = new ArrayList<>();
            int firstAtFault = -1, endedAt = -1;
            for (int round = 1; round <= 40 && endedAt < 0; round++) {
                clock.advance(Duration.ofSeconds(1));
                node.hookLaunched(c, round * perRound);
                List<ShareBackstop.Fault> now = node.round();
                faults.addAll(now);
                if (firstAtFault < 0 && now.stream().anyMatch(f -> f.key().startsWith("sm/tenant/attacker/"))) {
                    firstAtFault = round;
                }
                if (killed(node) >= 1) {
                    endedAt = round;
                }
            }
            boolean ended = attacker.waitFor(5, TimeUnit.SECONDS) && attacker.exitValue() == 128 + 9;
            Optional<ShareBackstop.SmExcess> sm = faults.stream().filter(ShareBackstop.SmExcess.class::isInstance)
                    .map(ShareBackstop.SmExcess.class::cast).filter(f -> f.owner().equals("tenant/attacker/c0")).findFirst();
            boolean neighbourLeft = beside.map(Process::isAlive).orElse(true)
                    && faults.stream().noneMatch(f -> f.key().contains("/neighbour/"));
            boolean contained = ended && sm.isPresent() && sm.get().launchesSeen() > 0 && neighbourLeft
                    && endedAt - firstAtFault + 1 >= ROUNDS_TO_END && killed(node) == 1;
            beside.ifPresent(Process::destroyForcibly);
            int from = firstAtFault, at = endedAt;
            return new Outcome(name, contained, sm.map(s -> String.format(Locale.ROOT,
                    "NVML (replayed from the H100) busy %.0f%% of %ds on a %d%% grant while the hook counted %d blocks "
                            + "(at fault above %.1f%%): at fault from round %d, %s at round %d%s", 100 * s.share(),
                    s.window().toSeconds(), percent, s.launchesSeen(), 100 * s.bound(), from,
                    ended ? "ended (SIGKILL)" : "NOT ended", at,
                    neighbour ? (neighbourLeft ? "; the 60% neighbour, as busy, left" : "; the neighbour was HIT") : ""))
                    .orElse("NOT at fault"), Double.NaN, Double.NaN);
        }
    }

    /**
     * A process without the hook holds 37,500 MiB (36.6× its container's 1,024 MiB share) for {@code onMs} of every
     * {@code periodMs}, {@code phaseMs} after it started; beside it a process of the same container within the share.
     * The backstop at its shipped settings: a round every {@code interval}, a memory sweep every {@code memory-interval}
     * between them. Contained: the burster ended within 10 s, the other process left running (before: never ended in
     * 37 rounds).
     */
    private Outcome memoryBurst(String name, int onMs, int periodMs, int phaseMs) throws Exception {
        long round = SHIPPED.interval().toMillis(), sweep = SHIPPED.memoryInterval().toMillis();
        try (TestingBackstop node = node(name)) {
            TestingBackstop.Container c = node.pod("tenant", "burster", 1, 25, 1024, "c0").getFirst();
            Process within = node.start(Optional.of(c), unhooked("alloc", "300", "60000"));
            Process burster = node.start(Optional.of(c), unhooked("burst", "37500", Integer.toString(onMs),
                    Integer.toString(periodMs), Integer.toString(phaseMs), "60"));
            long t0 = System.nanoTime(), nextRound = t0;
            int rounds = 0;
            while (burster.isAlive() && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10)) {
                if (System.nanoTime() >= nextRound) {
                    node.round();
                    rounds++;
                    nextRound += TimeUnit.MILLISECONDS.toNanos(round);
                } else {
                    node.sweep();
                }
                Thread.sleep(sweep);
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            boolean ended = burster.waitFor(5, TimeUnit.SECONDS) && burster.exitValue() == 128 + 9;
            boolean contained = ended && within.isAlive()
                    && node.counter("dilu_backstop_kills_total", "outcome", "killed") == 1;
            within.destroyForcibly();
            return new Outcome(name, contained, String.format(Locale.ROOT, "37,500 MiB on a 1,024 MiB share for %d ms of "
                    + "every %d ms (phase %d ms), without the hook: %s after %.1f s (%d rounds of %d ms, sweeps every "
                    + "%d ms); the container's 300 MiB process %s", onMs, periodMs, phaseMs,
                    ended ? "ended (SIGKILL)" : "NOT ended", seconds, rounds, round, sweep,
                    within.isAlive() ? "left running" : "ended too"), Double.NaN, Double.NaN);
        }
    }

    /**
     * The H100 recording's own scene, NVML's answers replayed: three busy processes time-slicing the GPU. A tenant runs
     * the quarter-time kernels (25% of the GPU's time alone) on a 25% grant, its hook charging its 66,000 blocks a second;
     * NVML reads it about 53% busy, beyond its 41.25%, because it waited out its neighbours' slices. Beside it the
     * narrow kernels on a 35% grant and the wide ones, back to back, on {@code wideLimit}. Contained: after 60 rounds
     * (or once the wide kernels are ended, where their grant is 10%) the tenant runs on, and only what passed its own
     * grant was ended.
     *
     * @param noisy whether the wide kernels pass their grant: 10% (ended) or 40% (within it, by their part of the time)
     */
    private Outcome recordedScene(String name, int wideLimit, boolean noisy) throws Exception {
        TestingClock clock = new TestingClock(Instant.parse("2026-11-26T12:00:00Z"));
        RecordedNvml nvml = RecordedNvml.load(clock);
        try (TestingBackstop node = TestingBackstop.overRecordedNvml(Files.createTempDirectory(work, name + "-"),
                SHIPPED.bounds(), ROUNDS_TO_END, nvml, clock)) {
            TestingBackstop.Container honest = node.pod("tenant", "honest", 1, 25, 1024, "c0").getFirst();
            Process within = node.start(Optional.of(honest), List.of("sleep", "600"));
            nvml.assign(within.pid(), RecordedNvml.Role.WIDE_KERNELS_QUARTER_TIME);
            Process narrow = node.start(Optional.of(node.pod("other", "narrow", 1, 35, 1024, "c0").getFirst()),
                    List.of("sleep", "600"));
            nvml.assign(narrow.pid(), RecordedNvml.Role.NARROW_KERNELS);
            Process wide = node.start(Optional.of(node.pod("other", "wide", 1, wideLimit, 1024, "c0").getFirst()),
                    List.of("sleep", "600"));
            nvml.assign(wide.pid(), RecordedNvml.Role.WIDE_KERNELS);
            int rounds = 0;
            double overlap = Double.NaN;
            List<ShareBackstop.Fault> faults = new ArrayList<>();
            while (rounds < 60 && !(noisy && killed(node) >= 1)) {
                rounds++;
                clock.advance(Duration.ofSeconds(1));
                node.hookLaunched(honest, rounds * 66_000L);
                faults.addAll(node.round());
            }
            for (ShareBackstop.Fault f : faults) {
                if (f instanceof ShareBackstop.SmExcess sm) {
                    overlap = sm.overlap();
                }
            }
            boolean wideEnded = wide.waitFor(noisy ? 5 : 0, TimeUnit.SECONDS) && wide.exitValue() == 128 + 9;
            boolean honestFaulted = faults.stream().anyMatch(f -> f.key().contains("/honest/"));
            boolean contained = within.isAlive() && narrow.isAlive() && !honestFaulted
                    && (noisy ? wideEnded && killed(node) == 1 : killed(node) == 0 && faults.isEmpty());
            String detail = String.format(Locale.ROOT, "%d rounds; the 25%% tenant %s, %s; the wide kernels on %d%% %s%s",
                    rounds, within.isAlive() ? "ran on" : "was ENDED", honestFaulted ? "AT FAULT" : "never at fault",
                    wideLimit, wideEnded ? "ended" : "ran on", Double.isNaN(overlap) ? ""
                            : String.format(Locale.ROOT, " (the GPU's containers read busy %.0f%% together)", 100 * overlap));
            List.of(within, narrow, wide).forEach(Process::destroyForcibly);
            return new Outcome(name, contained, detail, Double.NaN, Double.NaN);
        }
    }

    /** A pod in a namespace without the right asks for SLO priority, a 100% limit and a hair-trigger threshold. */
    private Outcome greedyQuotasWithoutRight() throws Exception {
        GpuDevice gpu = new GpuDevice("GPU-emu-iso-0", 0, "A100-40GB", 40_960, 108);
        try (TokenManager m = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64)) {
            PodView greedy = new PodView("tenant", "greedy", "uid-greedy", Instant.EPOCH, false,
                    Map.of(DiluNames.ASSIGNED_GPUS, gpu.uuid(), DiluNames.PRIORITY, "slo", DiluNames.SM_LIMIT, "100",
                            DiluNames.KLC_THRESHOLD, "1.01"),
                    List.of(new PodView.GpuContainer("c0", 10, 512)), false);
            Allocations allocations = new Allocations(new Allocations.Paths(Files.createTempDirectory(work, "alloc"),
                    "/var/run/dilu/control", "/opt/dilu/lib/libdilu-hook.so", "/opt/dilu/lib/libdilu-hook.so",
                    work.resolve("ld.so.preload"), Optional.empty()), List.of(gpu), m, InstantSource.system(), () -> List.of(greedy));
            allocations.recover();
            String id = allocations.allocate(gpu, java.util.stream.IntStream.range(0, 10)
                    .mapToObj(i -> gpu.uuid() + "::sm" + String.format("%02d", i)).toList()).getEnvsOrThrow("DILU_ALLOCATION");
            Allocation a = allocations.all().get(id);
            Tenant t = allocations.tenants().get(id);
            boolean contained = !t.sloSensitive() && a.smLimit() == 20 && Double.isNaN(a.klcThreshold())
                    && t.block().memoryLimit(0) == 512L << 20;
            return new Outcome("greedy-quotas-without-right", contained, "got " + a.priority().label() + ", limit "
                    + a.smLimit() + "%, threshold " + (Double.isNaN(a.klcThreshold()) ? "default" : a.klcThreshold())
                    + ", memory " + (t.block().memoryLimit(0) >> 20) + " MiB", Double.NaN, Double.NaN);
        }
    }

    /**
     * A 50% SLO victim holds its share of a GPU; then {@code count} containers of {@code percent} each reach the node's
     * Allocate for the same GPU, as pods bound by hand reach the kubelet when the uncovered namespaces' webhook is down
     * (its failurePolicy is Ignore) and the kubelet counts only its 1000 IDs per GPU. Contained: what is guaranteed on
     * the GPU stays within it, the victim's guarantee whole (before: nine 100% containers left it 41.1%).
     */
    private Outcome pinnedAroundTheScheduler(String name, int percent, int count) throws Exception {
        GpuDevice gpu = new GpuDevice("GPU-emu-iso-pinned", 0, "A100-40GB", 40_960, 108);
        PodView victim = new PodView("victims", "slo", "uid-slo", Instant.EPOCH, false,
                Map.of(DiluNames.ASSIGNED_GPUS, gpu.uuid(), DiluNames.PRIORITY, "slo"),
                List.of(new PodView.GpuContainer("c0", 50, 1024)), true);
        try (TokenManager m = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64)) {
            Allocations allocations = new Allocations(new Allocations.Paths(Files.createTempDirectory(work, name + "-"),
                    "/var/run/dilu/control", "/opt/dilu/lib/libdilu-hook.so", "/opt/dilu/lib/libdilu-hook.so",
                    work.resolve(name + "-ld.so.preload"), Optional.empty()), List.of(gpu), m, InstantSource.system(),
                    () -> List.of(victim));
            allocations.recover();
            String victimId = allocations.allocate(gpu, ids(gpu, 0, 50)).getEnvsOrThrow("DILU_ALLOCATION");
            int admitted = 0, refused = 0;
            String refusal = "";
            for (int k = 0; k < count; k++) {
                try {
                    allocations.allocate(gpu, ids(gpu, 100 + k * percent, percent));
                    admitted++;
                } catch (IllegalArgumentException e) {
                    refused++;
                    refusal = e.getMessage();
                }
            }
            double guaranteed = allocations.tenants().values().stream().mapToDouble(Tenant::request).sum();
            Tenant slo = allocations.tenants().get(victimId);
            int room = (100 - 50) / percent;
            boolean contained = admitted == Math.min(room, count) && guaranteed <= 1.0 + 1e-9 && slo.request() == 0.5;
            return new Outcome(name, contained, String.format(Locale.ROOT, "%d containers of %d%% beside a 50%% SLO share: "
                    + "%d admitted, %d refused (%s); guaranteed on the GPU %.0f%%, the victim's %.0f%%", count, percent,
                    admitted, refused, refusal.isEmpty() ? "none" : refusal, 100 * guaranteed, 100 * slo.request()),
                    Double.NaN, Double.NaN);
        }
    }

    /** {@code n} device IDs of {@code gpu} from {@code from}, as the kubelet hands them out. */
    private static List<String> ids(GpuDevice gpu, int from, int n) {
        return java.util.stream.IntStream.range(from, from + n)
                .mapToObj(i -> io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin.deviceId(gpu, i)).toList();
    }

    /**
     * A parked pod holding 60% of a GPU is deleted, with a day's grace period, then at once: the agent's own watch of a
     * real kube-apiserver and its token loop, the kubelet's PodResources over a real socket. Contained: its share stays
     * parked (no guarantee) while it is Terminating and once it is gone (before: booked in full 7 ms after the
     * deletion, for the whole grace period, taking an SLO neighbour from 100% to 78.3% of the GPU).
     */
    private Outcome parkedPodDeleted() throws Exception {
        String node = "gpu-node-parked-deleted", ns = "tenant";
        GpuDevice gpu = io.dilu.deviceplugin.gpu.EmulatedInventory.parse(node, "1x A100-40GB, 108 SMs").gpus().getFirst();
        Path sockets = io.dilu.testing.SocketTempDirs.create();
        try (io.dilu.testing.RealApiServer api = io.dilu.testing.RealApiServer.start();
                TokenManager tokens = new TokenManager(1, PARAMS, 1, InstantSource.system(), 16);
                io.dilu.deviceplugin.kubelet.FakePodResources kubelet = new io.dilu.deviceplugin.kubelet.FakePodResources(
                        sockets.resolve("pod-resources.sock"));
                io.dilu.deviceplugin.kubelet.PodResourcesClient podResources = new io.dilu.deviceplugin.kubelet
                        .PodResourcesClient(sockets.resolve("pod-resources.sock"), Duration.ofSeconds(2))) {
            var client = api.client();
            api.createNamespace(ns, Map.of());
            java.util.function.Consumer<String> pod = name -> client.pods().inNamespace(ns).resource(
                    new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(name).withNamespace(ns)
                            .withAnnotations(name.equals("cold") ? Map.of(DiluNames.ASSIGNED_GPUS, gpu.uuid(),
                                    DiluNames.PARKED, "2026-12-02T09:00:00Z") : Map.of()).endMetadata()
                            .withNewSpec().withNodeName(node).withAutomountServiceAccountToken(false).addNewContainer()
                            .withName("c0").withImage("registry.local/fn:1").withNewResources()
                            .withLimits(Map.of(DiluNames.GPU_SM, new io.fabric8.kubernetes.api.model.Quantity("60")))
                            .endResources().endContainer().endSpec().build()).create();
            pod.accept("cold");
            io.dilu.deviceplugin.agent.PodIdentity identity = new io.dilu.deviceplugin.agent.PodIdentity(client, node,
                    podResources, InstantSource.system(), Duration.ofSeconds(30),
                    new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
            try {
                Allocations allocations = new Allocations(new Allocations.Paths(Files.createTempDirectory(work,
                        "parked-deleted-"), "/var/run/dilu/control", "/opt/dilu/lib/libdilu-hook.so",
                        "/opt/dilu/lib/libdilu-hook.so", work.resolve("parked-deleted-ld.so.preload"), Optional.empty()),
                        List.of(gpu), tokens, InstantSource.system(), identity);
                identity.start();
                awaitTrue(() -> identity.seen().size() == 1);
                String id = allocations.allocate(gpu, ids(gpu, 0, 60)).getEnvsOrThrow("DILU_ALLOCATION");
                identity.watchParking(allocations::setParked);
                boolean parkedFirst = awaitTrue(() -> allocations.tenants().get(id).parked());
                // Deleted with a day's grace: Terminating, its container running on (no kubelet here ends it). A pod
                // created after it is seen once the watch has passed the deletion's event.
                client.pods().inNamespace(ns).withName("cold").withGracePeriod(86_400).delete();
                pod.accept("marker");
                awaitTrue(() -> identity.seen().stream().anyMatch(p -> p.name().equals("marker")));
                boolean terminating = allocations.tenants().get(id).parked();
                client.pods().inNamespace(ns).withName("cold").withGracePeriod(0).delete();
                awaitTrue(() -> identity.seen().stream().noneMatch(p -> p.name().equals("cold")));
                boolean gone = allocations.tenants().get(id).parked();
                return new Outcome("parked-pod-deleted", parkedFirst && terminating && gone, String.format(
                        "a parked 60%% share: %s; being deleted (grace 86,400 s) %s; gone from the API server %s",
                        parkedFirst ? "parked" : "NEVER PARKED", terminating ? "still parked" : "BOOKED IN FULL",
                        gone ? "still parked" : "BOOKED IN FULL"), Double.NaN, Double.NaN);
            } finally {
                identity.close();
            }
        }
    }

    /** Polls {@code condition} for up to 20 s; whether it held. */
    private static boolean awaitTrue(java.util.function.BooleanSupplier condition) throws InterruptedException {
        for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); System.nanoTime() < deadline; ) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.getAsBoolean();
    }
}
