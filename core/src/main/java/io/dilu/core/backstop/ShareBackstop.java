package io.dilu.core.backstop;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The node's backstop as a pure decision: what the GPU itself says each process uses, against each container's
 * grant. The hook enforces shares from inside the container; this catches what went around it — a process the hook
 * never loaded into, memory the hook never saw allocated, a container that reached a GPU it holds no share of.
 *
 * <p>Every rule judges a container by all of its processes on a GPU together, whether the hook saw them or not, and
 * whatever the hook reports: the hook's own figures are what a tenant who went around it controls. Three rules, each
 * with its evidence in the {@link Fault}:
 *
 * <ul>
 *   <li><b>Memory.</b> The GPU memory of a container's processes on a GPU, as the GPU reports it now, summed, above
 *       its share plus one {@link Bounds#contextAllowance} (the driver's own context memory, which the GPU reports as
 *       a process's and the hook never books: {@value #CONTEXT_ALLOWANCE_MIB} MiB measured) → {@link MemoryExcess},
 *       naming the processes to end: the largest first, until what remains is within the bound. One allowance per
 *       container, however many processes it runs: an allowance per process would let a tenant multiply it by
 *       starting processes.</li>
 *   <li><b>SM.</b> Over the last {@link Bounds#smWindow}, integrated over every sample of every process of the
 *       container (those ended since included): with an {@link Measure#SM_SHARE SM share} (the emulated GPU's thread
 *       blocks, the unit of the grant), above its SM limit × (1 + {@link Bounds#smMargin}) → {@link SmExcess}. With a
 *       {@link Measure#TIME_SHARE time share} (NVML's per-process utilisation: the share of time the process's
 *       kernels ran, whatever number of SMs they occupied), above its SM limit × (1 + {@link Bounds#smMargin}) +
 *       {@link Bounds#busySlack} → {@link SmExcess}: time is what a kernel takes from its neighbours on a GPU that
 *       time-slices, and what kernels the hook never saw (launched around it, or by other kernels on the GPU: dynamic
 *       parallelism) show as. Fail closed: a container whose kernels leave most SMs idle, or whose thread blocks
 *       outlast the block time a token stands for, is held to its limit in time as well. But a GPU runs one context
 *       at a time, and NVML counts a process busy while its kernels wait out a neighbour's time slice (233% over
 *       three busy processes in the H100's recording): when the processes of every container with a share of the
 *       GPU were busy together more than the window, each container is judged by its part of that total
 *       ({@link SmExcess#overlap}), so that the tenant who waited is not charged with its neighbour's time. And of
 *       several containers of one GPU at fault in time, only the one furthest beyond its bound is named to end: what
 *       the others read beyond theirs may be its time ({@link SmExcess#behind}).</li>
 *   <li><b>Unknown process.</b> A process on a GPU that belongs to no container with a share of that GPU, seen for
 *       {@link Bounds#unknownGrace} → {@link UnknownProcess}.</li>
 * </ul>
 *
 * <p>No rule judges before it has {@link Bounds#smWindow} of readings (SM) or its grace (unknown processes), so an
 * agent that just started, or a container that just appeared, is not judged on a sliver of evidence.
 */
public final class ShareBackstop {

    /**
     * The driver's context as NVML counts it in a process's GPU memory: 518 MiB for a process holding a context and
     * nothing else (with or without a module loaded), and 1542 MiB = 518 + 1024 for one that also allocated 1024 MiB,
     * on an NVIDIA H100 80GB HBM3 with driver 580.159.04, no MPS (docs/gpu/h100-nvml-backstop-2026-11-26.txt,
     * {@code MEMORY role=0 used_mib=518.0}, measured by hook-native/tools/nvml_probe.c). The default of
     * {@link Bounds#contextAllowance}.
     */
    public static final long CONTEXT_ALLOWANCE_MIB = 518;

    private ShareBackstop() {}

    /** What a per-process GPU figure means. */
    public enum Measure {
        /** Share of the GPU's thread-block capacity, the grant's own unit: comparable with an SM limit. */
        SM_SHARE,
        /** Share of time any kernel of the process ran (NVML's {@code smUtil}): an upper bound of its SM share. */
        TIME_SHARE
    }

    /**
     * The bounds.
     *
     * @param contextAllowance GPU memory, in bytes, a container may hold on a GPU beyond its share, once whatever
     *     its number of processes: the driver's context, which the hook never books ({@link #CONTEXT_ALLOWANCE_MIB}
     *     MiB measured). A container's second and later CUDA processes on a GPU pay their contexts from its share.
     * @param smWindow how much reading an SM judgement integrates
     * @param smMargin how far above its limit a container may run before it is at fault, as a fraction of the limit:
     *     the hook's own slack (the 10% it may run ahead, the periods it lends itself while the agent is late)
     * @param busySlack with {@link Measure#TIME_SHARE}, what a container may be busy beyond its limit × (1 + smMargin),
     *     as a share of the window: NVML's samples come per read, so up to one read's worth of a busy GPU may fall on
     *     the wrong side of the window's edge (one 1 s read of a 10 s window: 0.10)
     * @param unknownGrace how long a process may be on a GPU without a share before it is reported: long enough
     *     for the kubelet and the pod watch to name a container that just started
     */
    public record Bounds(long contextAllowance, Duration smWindow, double smMargin, double busySlack,
            Duration unknownGrace) {

        public Bounds {
            if (contextAllowance < 0) {
                throw new IllegalArgumentException("contextAllowance must be ≥ 0, got " + contextAllowance);
            }
            if (smWindow.isNegative() || smWindow.isZero()) {
                throw new IllegalArgumentException("smWindow must be positive, got " + smWindow);
            }
            if (!(smMargin >= 0 && smMargin <= 10)) {
                throw new IllegalArgumentException("smMargin must be in [0, 10], got " + smMargin);
            }
            if (!(busySlack >= 0 && busySlack < 1)) {
                throw new IllegalArgumentException("busySlack must be in [0, 1), got " + busySlack);
            }
            if (unknownGrace.isNegative()) {
                throw new IllegalArgumentException("unknownGrace must be ≥ 0, got " + unknownGrace);
            }
        }
    }

    /** A process on a GPU: the pid with its start time, so that a later process reusing the pid is another one. */
    public record ProcessKey(String gpu, long pid, long startTicks) {
        @Override
        public String toString() {
            return "pid " + pid + " on " + gpu;
        }
    }

    /**
     * One reading of one process.
     *
     * @param memoryBytes GPU memory it holds now; negative when the GPU does not say
     * @param share what it used of the GPU since the previous reading ({@link Measure}); NaN when not known
     * @param interval the time that reading covers
     */
    public record Sample(Instant at, long memoryBytes, double share, Duration interval) {}

    /**
     * A process and its readings.
     *
     * @param owner the container it belongs to (the caller's name for it), empty when it belongs to none the node
     *     knows
     * @param present whether the latest reading saw it; processes gone since still count for the SM window
     * @param firstSeen when it was first read
     * @param samples its readings, oldest first
     */
    public record Observation(ProcessKey process, Optional<String> owner, boolean present, Instant firstSeen,
            List<Sample> samples) {

        public Observation {
            samples = List.copyOf(samples);
        }

        long memoryBytes() {
            return samples.isEmpty() ? -1 : samples.getLast().memoryBytes();
        }
    }

    /**
     * A container's share of one GPU.
     *
     * @param smLimit fraction of the GPU
     * @param launchesSeen thread blocks its hook reported launching on that GPU over the SM window, negative when not
     *     known: evidence beside a fault (kernels the GPU ran that the hook never charged), never part of a rule
     */
    public record Grant(String owner, String gpu, long memoryBytes, double smLimit, long launchesSeen) {}

    /** A fault, with what shows it. */
    public sealed interface Fault permits MemoryExcess, SmExcess, UnknownProcess {
        /** Identifies the fault across rounds: the same container or process at fault for the same reason. */
        String key();
    }

    /** A process's part of the evidence. */
    public record ProcessUse(ProcessKey process, long memoryBytes, double share) {}

    /**
     * @param heldBytes what the container's processes hold on the GPU
     * @param boundBytes its share plus the context allowance
     * @param processes each of them, the largest first
     * @param toEnd the processes whose end brings the container within the bound
     */
    public record MemoryExcess(String owner, String gpu, long heldBytes, long shareBytes, long boundBytes,
            List<ProcessUse> processes, List<ProcessKey> toEnd) implements Fault {
        @Override
        public String key() {
            return "memory/" + owner + "/" + gpu;
        }
    }

    /**
     * @param share what the container used over the window ({@link #measure}), its part of the GPU's time where the
     *     GPU's processes overlapped
     * @param overlap with {@link Measure#TIME_SHARE}, what the processes of every container with a share of the GPU
     *     were busy together over the window, as a share of it, when above 1 (the readings overlap: {@link #share} is
     *     the container's own ÷ this); 1 otherwise
     * @param bound what it was allowed before it is at fault
     * @param launchesSeen what its hook reported launching over the window (negative: not known)
     * @param processes each of its processes over the window, the largest first, those ended since included
     * @param toEnd the processes still running whose end brings the container within the bound, once those ended
     *     since have left the window; none while {@link #behind} is not empty
     * @param behind with {@link Measure#TIME_SHARE}, the container of the same GPU further beyond its bound, judged
     *     first: until it is within its own, this one's reading may be its time
     */
    public record SmExcess(String owner, String gpu, Measure measure, double share, double overlap, double smLimit,
            double bound, long launchesSeen, Duration window, List<ProcessUse> processes, List<ProcessKey> toEnd,
            Optional<String> behind) implements Fault {
        @Override
        public String key() {
            return "sm/" + owner + "/" + gpu;
        }
    }

    /**
     * @param owner the container it belongs to when it belongs to one (that holds no share of this GPU)
     * @param seenFor how long it has been on the GPU
     */
    public record UnknownProcess(ProcessKey process, Optional<String> owner, long memoryBytes, Duration seenFor)
            implements Fault {
        @Override
        public String key() {
            return "unknown/" + process.gpu() + "/" + process.pid() + "/" + process.startTicks();
        }
    }

    /**
     * Judges every process against the grants.
     *
     * @param measure what the processes' {@link Sample#share} is
     * @param readingSince since when the readings have gone on without a gap: no SM judgement before a whole window
     * @param grants the shares of the GPUs' containers
     */
    public static List<Fault> judge(Bounds bounds, Measure measure, List<Observation> processes, List<Grant> grants,
            Instant readingSince, Instant now) {
        Map<String, Grant> byOwnerAndGpu = new LinkedHashMap<>();
        grants.forEach(g -> byOwnerAndGpu.put(g.owner() + "\u0000" + g.gpu(), g));
        Map<Grant, List<Observation>> perGrant = new LinkedHashMap<>();
        List<Fault> faults = new ArrayList<>();
        for (Observation o : processes) {
            Grant g = o.owner().map(owner -> byOwnerAndGpu.get(owner + "\u0000" + o.process().gpu())).orElse(null);
            if (g != null) {
                perGrant.computeIfAbsent(g, k -> new ArrayList<>()).add(o);
            } else if (o.present() && !o.firstSeen().isAfter(now.minus(bounds.unknownGrace()))) {
                faults.add(new UnknownProcess(o.process(), o.owner(), Math.max(0, o.memoryBytes()),
                        Duration.between(o.firstSeen(), now)));
            }
        }
        boolean wholeWindow = !readingSince.isAfter(now.minus(bounds.smWindow()));
        Map<String, Double> overlap = new LinkedHashMap<>();
        if (measure == Measure.TIME_SHARE) {
            // Only processes with a share of the GPU: one without (reported, never ended) must not shield the rest.
            perGrant.values().forEach(os -> os.forEach(o -> overlap.merge(o.process().gpu(), used(bounds, o, now),
                    Double::sum)));
        }
        Map<String, SmExcess> furthest = new LinkedHashMap<>();
        List<SmExcess> inTime = new ArrayList<>();
        perGrant.forEach((grant, observed) -> {
            memory(bounds, grant, observed).ifPresent(faults::add);
            if (wholeWindow) {
                sm(bounds, measure, Math.max(1, overlap.getOrDefault(grant.gpu(), 0.0)), grant, observed, now)
                        .ifPresent(f -> {
                            if (measure == Measure.TIME_SHARE) {
                                inTime.add(f);
                                furthest.merge(f.gpu(), f, (a, b) -> b.share() / b.bound() > a.share() / a.bound() ? b : a);
                            } else {
                                faults.add(f);
                            }
                        });
            }
        });
        for (SmExcess f : inTime) {
            SmExcess first = furthest.get(f.gpu());
            faults.add(first == f ? f : new SmExcess(f.owner(), f.gpu(), f.measure(), f.share(), f.overlap(), f.smLimit(),
                    f.bound(), f.launchesSeen(), f.window(), f.processes(), List.of(), Optional.of(first.owner())));
        }
        return faults;
    }

    private static Optional<Fault> memory(Bounds bounds, Grant grant, List<Observation> observed) {
        List<ProcessUse> uses = observed.stream().filter(o -> o.present() && o.memoryBytes() >= 0)
                .map(o -> new ProcessUse(o.process(), o.memoryBytes(), Double.NaN))
                .sorted(Comparator.comparingLong(ProcessUse::memoryBytes).reversed()
                        .thenComparingLong(u -> u.process().pid()))
                .toList();
        long held = uses.stream().mapToLong(ProcessUse::memoryBytes).reduce(0, ShareBackstop::saturatedAdd);
        long bound = saturatedAdd(grant.memoryBytes(), bounds.contextAllowance());
        if (held <= bound) {
            return Optional.empty();
        }
        List<ProcessKey> toEnd = new ArrayList<>();
        long remaining = held;
        for (ProcessUse u : uses) {
            if (remaining <= bound) {
                break;
            }
            toEnd.add(u.process());
            remaining -= u.memoryBytes();
        }
        return Optional.of(new MemoryExcess(grant.owner(), grant.gpu(), held, grant.memoryBytes(), bound, uses, toEnd));
    }

    /** What a process used over the SM window, as a share of it. */
    private static double used(Bounds bounds, Observation o, Instant now) {
        Instant from = now.minus(bounds.smWindow());
        double used = 0;
        for (Sample s : o.samples()) {
            if (s.at().isAfter(from) && !s.at().isAfter(now) && Double.isFinite(s.share()) && s.share() > 0) {
                used += s.share() * seconds(s.interval());
            }
        }
        return used / seconds(bounds.smWindow());
    }

    /** @param overlap what the container's use is divided by: the GPU's processes' use together, when above 1 */
    private static Optional<SmExcess> sm(Bounds bounds, Measure measure, double overlap, Grant grant,
            List<Observation> observed, Instant now) {
        List<ProcessUse> uses = new ArrayList<>();
        Map<ProcessKey, Boolean> present = new LinkedHashMap<>();
        double total = 0;
        for (Observation o : observed) {
            double used = used(bounds, o, now) / overlap;
            uses.add(new ProcessUse(o.process(), Math.max(0, o.memoryBytes()), used));
            present.put(o.process(), o.present());
            total += used;
        }
        uses.sort(Comparator.comparingDouble(ProcessUse::share).reversed().thenComparingLong(u -> u.process().pid()));
        double limit = grant.smLimit() * (1 + bounds.smMargin());
        double bound = measure == Measure.TIME_SHARE ? limit + bounds.busySlack() : limit;
        if (!(total > bound)) {
            return Optional.empty();
        }
        // What ended has stopped using the GPU: its part leaves the window by itself; the rest, largest first.
        double remaining = total - uses.stream().filter(u -> !present.get(u.process())).mapToDouble(ProcessUse::share).sum();
        List<ProcessKey> toEnd = new ArrayList<>();
        for (ProcessUse u : uses) {
            if (remaining <= bound) {
                break;
            }
            if (present.get(u.process())) {
                toEnd.add(u.process());
                remaining -= u.share();
            }
        }
        return Optional.of(new SmExcess(grant.owner(), grant.gpu(), measure, total, overlap, grant.smLimit(), bound,
                grant.launchesSeen(), bounds.smWindow(), uses, toEnd, Optional.empty()));
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
