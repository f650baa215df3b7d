package io.dilu.deviceplugin.bench;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.deviceplugin.backstop.GpuProcesses;
import io.dilu.deviceplugin.backstop.NvmlProcesses;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The node agent's own NVML reader ({@link NvmlProcesses}, through JNA) on the GPU at hand, judged by the backstop's
 * rules ({@link ShareBackstop}) at the agent's shipped bounds, so that what the backstop was calibrated on
 * (docs/gpu/h100-nvml-backstop-2026-11-26.txt, read by the C probe) is read again by the agent's code on every GPU the
 * packed GPU check runs on. {@code dilu-nvml-probe --hold} runs its five processes on GPU 0 (a context; a context and
 * 1024 MiB; one-block kernels; kernels filling every SM; the same a quarter of the time); the reader reads them every
 * second for the SM window and a second more, and each process is judged as a container of its own:
 *
 * <ul>
 *   <li>the context alone, on a share of 0 MiB: within the context allowance, or the allowance is too small for this
 *       GPU and driver (the check fails, saying what the context measured);</li>
 *   <li>the context and 1024 MiB, on a share of 1024 MiB: within;</li>
 *   <li>one-block kernels, on a 100% limit: within, whatever their busy time;</li>
 *   <li>kernels filling every SM, and the same a quarter of the time, each on a 10% limit: at fault for SM use.</li>
 * </ul>
 *
 * Where NVML finds no GPU (the emulated GPU, CI) it says so on standard error and exits 0, having loaded what the reader
 * loads. Ends with one {@code BENCH nvml-backstop} line on a GPU; exits 1 when a check fails.
 *
 * <p>Usage: {@code NvmlBackstopCheck NATIVE_DIR} (the build's or the pack's, holding bin/dilu-nvml-probe).
 */
public final class NvmlBackstopCheck {

    private static final long MIB = 1L << 20;
    /** The agent's shipped bounds (NodeAgentConfig.BackstopConfig's defaults). */
    private static final ShareBackstop.Bounds SHIPPED = new ShareBackstop.Bounds(ShareBackstop.CONTEXT_ALLOWANCE_MIB * MIB,
            Duration.ofSeconds(10), 0.25, 0.10, Duration.ofSeconds(10));
    private static final Pattern HOLD = Pattern.compile("^HOLD role=(\\d) pid=(\\d+) name=(\\S+)$");
    private static final String[] NAMES = {"context-only", "context+1024MiB", "narrow", "wide", "wide-quarter"};
    /** Per role: its share of memory (MiB), its SM limit, and whether an SM fault is expected. */
    private static final long[] SHARE_MIB = {0, 1024, 1024, 1024, 1024};
    private static final double[] LIMIT = {1.0, 1.0, 1.0, 0.10, 0.10};
    private static final boolean[] SM_FAULT = {false, false, false, true, true};

    private NvmlBackstopCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: NvmlBackstopCheck NATIVE_DIR");
            System.exit(2);
        }
        new ShareBackstop.Bounds(SHIPPED.contextAllowance(), SHIPPED.smWindow(), SHIPPED.smMargin(), SHIPPED.busySlack(),
                SHIPPED.unknownGrace()); // what the judgement loads, loaded where there is no GPU too (the pack's trace)
        Optional<NvmlInventory> nvml = NvmlInventory.load();
        if (nvml.isEmpty() || nvml.get().gpus().isEmpty()) {
            System.err.println("nvml-backstop: no GPU through NVML here; the agent's NVML reader was not run");
            return;
        }
        Path probe = Path.of(args[0]).resolve("bin/dilu-nvml-probe");
        if (!Files.isExecutable(probe)) {
            throw new IllegalStateException(probe + " is missing: the NVML check needs the C probe's processes");
        }
        System.exit(run(nvml.get(), probe) == 0 ? 0 : 1);
    }

    private static int run(NvmlInventory inventory, Path probe) throws IOException, InterruptedException {
        Process holder = new ProcessBuilder(probe.toString(), "--hold").redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try {
            long[] pids = announced(holder);
            Runnable second = () -> {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            };
            return judge(new NvmlProcesses(inventory), inventory.gpus().getFirst().uuid(),
                    inventory.gpus().getFirst().model(), pids, InstantSource.system(), second, System.out);
        } finally {
            holder.getOutputStream().close(); // the probe ends its processes when its input closes
            if (!holder.waitFor(10, TimeUnit.SECONDS)) {
                holder.destroyForcibly();
            }
        }
    }

    /** The pid of each role, as the probe announces them once every process is ready. */
    private static long[] announced(Process holder) throws IOException {
        long[] pids = new long[NAMES.length];
        BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
        for (int seen = 0; seen < NAMES.length; ) {
            String line = out.readLine();
            if (line == null) {
                throw new IllegalStateException("dilu-nvml-probe --hold ended before its processes were ready");
            }
            Matcher m = HOLD.matcher(line.strip());
            if (m.matches()) {
                pids[Integer.parseInt(m.group(1))] = Long.parseLong(m.group(2));
                seen++;
            }
        }
        return pids;
    }

    /**
     * Reads {@code reader} once a {@code second} for the window and two more, then judges the probe's processes
     * ({@code pids} by role) on GPU 0; prints what it found on {@code out}. The number of checks failed.
     */
    static int judge(GpuProcesses reader, String gpu, String model, long[] pids, InstantSource clock, Runnable second,
            PrintStream out) {
        Map<Long, List<ShareBackstop.Sample>> samples = new HashMap<>();
        Map<Long, Long> memory = new HashMap<>();
        Instant start = clock.instant(), last = null;
        int failures = 0;
        long reads = SHIPPED.smWindow().toSeconds() + 2;
        for (int r = 0; r < reads; r++) {
            second.run();
            Instant now = clock.instant();
            List<GpuProcesses.Use> uses;
            try {
                uses = reader.read();
            } catch (GpuProcesses.ReadFailure e) {
                out.println("FAILED: NVML could not be read: " + e.getMessage());
                return 1;
            }
            Duration interval = last == null ? Duration.ZERO : Duration.between(last, now);
            last = now;
            for (GpuProcesses.Use u : uses) {
                if (u.gpu() == 0) {
                    double share = interval.isZero() ? Double.NaN : u.share();
                    samples.computeIfAbsent(u.pid(), k -> new ArrayList<>())
                            .add(new ShareBackstop.Sample(now, u.memoryBytes(), share, interval));
                    memory.put(u.pid(), u.memoryBytes());
                }
            }
        }
        List<ShareBackstop.Observation> observations = new ArrayList<>();
        List<ShareBackstop.Grant> grants = new ArrayList<>();
        for (int role = 0; role < NAMES.length; role++) {
            String owner = "check/" + NAMES[role] + "/c0";
            List<ShareBackstop.Sample> own = samples.getOrDefault(pids[role], List.of());
            if (own.isEmpty()) {
                out.printf(Locale.ROOT, "FAILED: NVML did not list the %s process (pid %d)%n", NAMES[role], pids[role]);
                failures++;
                continue;
            }
            observations.add(new ShareBackstop.Observation(new ShareBackstop.ProcessKey(gpu, pids[role], 0),
                    Optional.of(owner), true, start, own));
            grants.add(new ShareBackstop.Grant(owner, gpu, SHARE_MIB[role] * MIB, LIMIT[role], -1));
        }
        List<ShareBackstop.Fault> faults = ShareBackstop.judge(SHIPPED, reader.measure(), observations, grants, start,
                last);
        double[] busy = new double[NAMES.length];
        for (int role = 0; role < NAMES.length; role++) {
            String key = "check/" + NAMES[role] + "/c0/" + gpu;
            boolean memoryFault = faults.stream().anyMatch(f -> f.key().equals("memory/" + key));
            boolean smFault = faults.stream().anyMatch(f -> f.key().equals("sm/" + key));
            busy[role] = busyOf(samples.getOrDefault(pids[role], List.of()));
            long mib = memory.getOrDefault(pids[role], -1L) / MIB;
            out.printf(Locale.ROOT, "nvml-backstop: %-16s pid %-8d %6d MiB on a %4d MiB share, busy %5.1f%% on a "
                    + "%3.0f%% limit: memory %s, SM %s%n", NAMES[role], pids[role], mib, SHARE_MIB[role],
                    100 * busy[role], 100 * LIMIT[role], memoryFault ? "AT FAULT" : "within",
                    smFault ? "AT FAULT" : "within");
            if (memoryFault) {
                out.printf(Locale.ROOT, "FAILED: %s holds %d MiB on a %d MiB share: beyond the %d MiB context "
                        + "allowance, calibrated on an H100 (ShareBackstop.CONTEXT_ALLOWANCE_MIB); raise "
                        + "dilu.agent.backstop.context-allowance-mib for this GPU and driver%n", NAMES[role], mib,
                        SHARE_MIB[role], ShareBackstop.CONTEXT_ALLOWANCE_MIB);
                failures++;
            }
            if (smFault != SM_FAULT[role]) {
                out.printf(Locale.ROOT, "FAILED: %s is %s for SM use, expected %s%n", NAMES[role],
                        smFault ? "at fault" : "within", SM_FAULT[role] ? "at fault" : "within");
                failures++;
            }
        }
        out.printf(Locale.ROOT, "BENCH nvml-backstop gpu=%s context_mib=%d alloc_mib=%d allowance_mib=%d "
                + "busy_narrow=%.3f busy_wide=%.3f busy_quarter=%.3f faults=%d checks_failed=%d%n",
                model.replace(' ', '_'), memory.getOrDefault(pids[0], -1L) / MIB,
                memory.getOrDefault(pids[1], -1L) / MIB, ShareBackstop.CONTEXT_ALLOWANCE_MIB, busy[2], busy[3], busy[4],
                faults.size(), failures);
        return failures;
    }

    /** The share of the time the samples cover that the process was busy, as the backstop integrates it. */
    private static double busyOf(List<ShareBackstop.Sample> own) {
        double used = 0, covered = 0;
        for (ShareBackstop.Sample s : own) {
            if (Double.isFinite(s.share())) {
                used += s.share() * s.interval().toNanos();
                covered += s.interval().toNanos();
            }
        }
        return covered == 0 ? 0 : used / covered;
    }
}
