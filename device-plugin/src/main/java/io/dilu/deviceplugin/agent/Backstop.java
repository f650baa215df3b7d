package io.dilu.deviceplugin.agent;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.backstop.ShareBackstop.Fault;
import io.dilu.core.backstop.ShareBackstop.MemoryExcess;
import io.dilu.core.backstop.ShareBackstop.ProcessKey;
import io.dilu.core.backstop.ShareBackstop.SmExcess;
import io.dilu.core.backstop.ShareBackstop.UnknownProcess;
import io.dilu.core.placement.GpuDevice;
import io.dilu.deviceplugin.backstop.Cgroups;
import io.dilu.deviceplugin.backstop.GpuProcesses;
import io.dilu.deviceplugin.backstop.ProcFs;
import io.dilu.deviceplugin.backstop.ProcessKiller;
import io.dilu.kube.events.PodEvent;
import io.dilu.kube.events.PodEventRecorder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * The node's backstop: every round (a second) it reads what the GPUs say each process uses ({@link GpuProcesses}),
 * finds each process's container from its cgroup ({@link Cgroups}) — every process on a GPU, whether the hook ever
 * loaded into it or holds a slot of its report page — and that container's shares from the agent's
 * {@link Allocations}, asks {@link ShareBackstop} for faults, and acts on them:
 *
 * <ul>
 *   <li>every new fault counts in {@code dilu_container_share_violations_total{kind}} and is logged;</li>
 *   <li>a container at fault is told by a Warning Event on its pod: {@value #SHARE_EXCEEDED} for memory or SM use
 *       beyond its share, {@value #GPU_WITHOUT_SHARE} for a process on a GPU it holds no share of;</li>
 *   <li>memory beyond the bound ends the processes {@link MemoryExcess#toEnd()} names at once, when
 *       {@code dilu.agent.backstop.kill-memory-excess} (the default): memory held is what the GPU reports now;</li>
 *   <li>SM use beyond the bound ends the processes {@link SmExcess#toEnd()} names once the container has been at
 *       fault {@link Settings#killComputeAfterRounds} rounds in a row, each judging the whole window, so that no one
 *       odd read ends a process; only where the figure is the driver's ({@link GpuProcesses#shareTrusted()}: NVML),
 *       never on an emulated GPU's tenant-writable slots;</li>
 *   <li>every kill goes through {@link ProcessKiller}, which checks that the pid still names that process in that
 *       container. Unknown processes are reported, never ended: the pod watch may not know their container yet.</li>
 * </ul>
 */
final class Backstop {

    private static final Logger LOG = Logger.getLogger(Backstop.class);
    static final String SHARE_EXCEEDED = "DiluShareExceeded";
    static final String GPU_WITHOUT_SHARE = "DiluGpuWithoutShare";
    private static final long MIB = 1L << 20;

    /**
     * What the backstop does beyond what it judges.
     *
     * @param killComputeAfterRounds the rounds in a row a container must be at fault for SM use before its processes
     *     are ended; 0: never ended
     */
    record Settings(ShareBackstop.Bounds bounds, boolean killMemoryExcess, int killComputeAfterRounds) {
        Settings {
            if (killComputeAfterRounds < 0) {
                throw new IllegalArgumentException("killComputeAfterRounds must be ≥ 0 (0: never), got "
                        + killComputeAfterRounds);
            }
        }
    }

    /** A process on a GPU, across rounds. */
    private static final class Track {
        final Instant firstSeen;
        final Deque<ShareBackstop.Sample> samples = new ArrayDeque<>();
        Optional<Cgroups.ContainerId> container = Optional.empty();
        boolean containerRead;
        ContainerRef owner;

        Track(Instant firstSeen) {
            this.firstSeen = firstSeen;
        }
    }

    private final GpuProcesses source;
    private final List<GpuDevice> gpus;
    private final ProcFs proc;
    private final ProcessKiller killer;
    private final Allocations allocations;
    private final NodePods pods;
    private final PodEventRecorder recorder;
    private final InstantSource clock;
    private final Settings settings;
    private final Map<ProcessKey, Track> tracks = new HashMap<>();
    /** Per share and device of its control block: (epoch ms, blocks its hook reported) over the SM window. */
    private final Map<String, Deque<long[]>> launches = new HashMap<>();
    private final Map<String, Counter> violations = new HashMap<>();
    private final Map<ProcessKiller.Outcome, Counter> kills = new EnumMap<>(ProcessKiller.Outcome.class);
    private final Counter readFailures;
    private Set<String> faultedBefore = Set.of();
    /** SM faults by key: the rounds in a row each has been found. */
    private Map<String, Integer> roundsAtFault = Map.of();
    private Instant readingSince;
    private Instant lastRead;

    Backstop(GpuProcesses source, List<GpuDevice> gpus, ProcFs proc, ProcessKiller killer, Allocations allocations,
            NodePods pods, PodEventRecorder recorder, InstantSource clock, Settings settings, MeterRegistry metrics) {
        this.source = source;
        this.gpus = List.copyOf(gpus);
        this.proc = proc;
        this.killer = killer;
        this.allocations = allocations;
        this.pods = pods;
        this.recorder = recorder;
        this.clock = clock;
        this.settings = settings;
        for (String kind : List.of("memory", "sm", "unknown-process")) {
            violations.put(kind, Counter.builder("dilu_container_share_violations_total").tag("kind", kind)
                    .description("processes or containers found using a GPU beyond their share, or a GPU without one, "
                            + "by the backstop (counted when a fault begins)").register(metrics));
        }
        for (ProcessKiller.Outcome o : ProcessKiller.Outcome.values()) {
            kills.put(o, Counter.builder("dilu_backstop_kills_total").tag("outcome", o.label())
                    .description("processes the backstop set out to end for GPU memory or SM use beyond their "
                            + "container's share").register(metrics));
        }
        this.readFailures = Counter.builder("dilu_backstop_read_failures_total")
                .description("rounds in which the GPUs' per-process use could not be read").register(metrics);
    }

    /** One round; the faults found, for tests. */
    synchronized List<Fault> round() {
        Instant now = clock.instant();
        List<GpuProcesses.Use> uses;
        try {
            uses = source.read();
        } catch (GpuProcesses.ReadFailure | RuntimeException e) {
            readFailures.increment();
            readingSince = null; // a gap: the SM window starts again
            LOG.warnf("the backstop cannot read the GPUs' processes this round: %s", e.getMessage());
            return List.of();
        }
        Duration interval = lastRead == null ? Duration.ZERO : Duration.between(lastRead, now);
        lastRead = now;
        if (readingSince == null) {
            readingSince = now;
        }
        Map<String, PodView> podsByUid = new HashMap<>();
        for (PodView p : pods.seen()) {
            podsByUid.put(p.uid(), p);
        }
        Set<ProcessKey> present = new HashSet<>();
        for (GpuProcesses.Use u : uses) {
            if (u.gpu() < 0 || u.gpu() >= gpus.size()) {
                continue;
            }
            OptionalLong start = u.startTicks() != 0 ? OptionalLong.of(u.startTicks()) : proc.startTicks(u.pid());
            if (start.isEmpty()) {
                continue; // ended since the GPU was read
            }
            ProcessKey key = new ProcessKey(gpus.get(u.gpu()).uuid(), u.pid(), start.getAsLong());
            Track t = tracks.computeIfAbsent(key, k -> new Track(now));
            if (!t.containerRead || t.container.isEmpty()) {
                t.container = proc.container(u.pid());
                t.containerRead = true;
            }
            t.owner = t.container.flatMap(c -> owner(c, podsByUid)).orElse(null);
            double share = interval.isZero() ? Double.NaN : u.share();
            t.samples.addLast(new ShareBackstop.Sample(now, u.memoryBytes(), share, interval));
            present.add(key);
        }
        Instant horizon = now.minus(settings.bounds().smWindow());
        tracks.entrySet().removeIf(e -> {
            Deque<ShareBackstop.Sample> s = e.getValue().samples;
            while (!s.isEmpty() && s.peekFirst().at().isBefore(horizon)) {
                s.removeFirst();
            }
            return !present.contains(e.getKey()) && s.isEmpty();
        });
        List<ShareBackstop.Grant> grants = grants(now);
        List<ShareBackstop.Observation> observations = new ArrayList<>();
        tracks.forEach((key, t) -> observations.add(new ShareBackstop.Observation(key,
                Optional.ofNullable(t.owner).map(ContainerRef::toString), present.contains(key), t.firstSeen,
                List.copyOf(t.samples))));
        List<Fault> faults = ShareBackstop.judge(settings.bounds(), source.measure(), observations, grants, readingSince, now);
        act(faults, podsByUid);
        return faults;
    }

    /**
     * Between rounds: the memory of the processes the last round found on a GPU, read alone and judged by the memory
     * rule alone, so that memory held for less than a round is seen (issue 45: an unhooked process held 36.6× its
     * share for 100 ms of every second, and the one-second rounds never saw it). A process new since the last round is
     * not read before the next one. The faults found, for tests.
     */
    synchronized List<Fault> sweep() {
        if (tracks.isEmpty() || !settings.killMemoryExcess()) {
            return List.of();
        }
        Instant now = clock.instant();
        Map<Long, List<ProcessKey>> byPid = new HashMap<>();
        tracks.keySet().forEach(k -> byPid.computeIfAbsent(k.pid(), p -> new ArrayList<>()).add(k));
        List<GpuProcesses.Use> uses;
        try {
            uses = source.memory(byPid.keySet());
        } catch (GpuProcesses.ReadFailure | RuntimeException e) {
            return List.of(); // the next round reads, and says so
        }
        List<ShareBackstop.Observation> observations = new ArrayList<>();
        for (GpuProcesses.Use u : uses) {
            if (u.gpu() < 0 || u.gpu() >= gpus.size()) {
                continue;
            }
            String gpu = gpus.get(u.gpu()).uuid();
            for (ProcessKey k : byPid.getOrDefault(u.pid(), List.of())) {
                Track t = tracks.get(k);
                if (k.gpu().equals(gpu) && (u.startTicks() == 0 || u.startTicks() == k.startTicks()) && t.owner != null) {
                    observations.add(new ShareBackstop.Observation(k, Optional.of(t.owner.toString()), true, t.firstSeen,
                            List.of(new ShareBackstop.Sample(now, u.memoryBytes(), Double.NaN, Duration.ZERO))));
                }
            }
        }
        // No SM judgement (no window of readings) and no unknown process (the rounds report those).
        List<Fault> faults = ShareBackstop.judge(settings.bounds(), source.measure(), observations, memoryGrants(), now, now)
                .stream().filter(MemoryExcess.class::isInstance).toList();
        if (!faults.isEmpty()) {
            Map<String, PodView> podsByUid = new HashMap<>();
            pods.seen().forEach(p -> podsByUid.put(p.uid(), p));
            Set<String> seen = new HashSet<>(faultedBefore);
            for (Fault f : faults) {
                memory((MemoryExcess) f, seen.add(f.key()), podsByUid);
            }
            faultedBefore = seen;
        }
        return faults;
    }

    /** Each matched share's memory on each GPU. */
    private List<ShareBackstop.Grant> memoryGrants() {
        return judged().stream().map(part -> grant(part, -1)).toList();
    }

    /** The parts of shares matched to a container that the kubelet still has: the ones the backstop judges. */
    private List<Allocations.Part> judged() {
        return allocations.parts().stream()
                .filter(p -> p.allocation().owner().isPresent() && p.allocation().missingSince().isEmpty()).toList();
    }

    /** A part's grant, with the blocks its hook reported launching over the SM window ({@code -1}: not known). */
    private static ShareBackstop.Grant grant(Allocations.Part part, long launched) {
        return new ShareBackstop.Grant(part.allocation().owner().get().toString(), part.uuid(), part.memoryMib() * MIB,
                part.tenant().limit(), launched);
    }

    /** The container a process is in, by the pod's status; empty while the pod watch does not know it. */
    private static Optional<ContainerRef> owner(Cgroups.ContainerId c, Map<String, PodView> podsByUid) {
        PodView pod = podsByUid.get(c.podUid());
        if (pod == null) {
            return Optional.empty();
        }
        String name = pod.containerIds().get(c.containerId());
        return Optional.ofNullable(name).map(n -> new ContainerRef(pod.namespace(), pod.name(), n));
    }

    /** Each matched share's part of each GPU, with what its hook reported launching over the SM window. */
    private List<ShareBackstop.Grant> grants(Instant now) {
        long nowMs = now.toEpochMilli();
        long windowMs = settings.bounds().smWindow().toMillis();
        List<ShareBackstop.Grant> grants = new ArrayList<>();
        Set<String> live = new HashSet<>();
        for (Allocations.Part part : judged()) {
            String id = part.allocation().id() + "/" + part.tenant().device();
            live.add(id);
            Deque<long[]> history = launches.computeIfAbsent(id, k -> new ArrayDeque<>());
            history.addLast(new long[] {nowMs, part.tenant().block().blocksLaunched(part.tenant().device())});
            // Keep one reading at or before the window's start: the baseline.
            while (history.size() > 1 && history.stream().skip(1).findFirst().get()[0] <= nowMs - windowMs) {
                history.removeFirst();
            }
            long[] first = history.peekFirst();
            long seen = first[0] <= nowMs - windowMs * 9 / 10 ? Math.max(0, history.peekLast()[1] - first[1]) : -1;
            grants.add(grant(part, seen));
        }
        launches.keySet().retainAll(live);
        return grants;
    }

    private void act(List<Fault> faults, Map<String, PodView> podsByUid) {
        Set<String> now = new HashSet<>();
        Map<String, Integer> rounds = new HashMap<>();
        for (Fault f : faults) {
            now.add(f.key());
            boolean fresh = !faultedBefore.contains(f.key());
            switch (f) {
                case MemoryExcess m -> memory(m, fresh, podsByUid);
                case SmExcess s -> {
                    int inARow = roundsAtFault.getOrDefault(s.key(), 0) + 1;
                    rounds.put(s.key(), inARow);
                    sm(s, fresh, inARow, podsByUid);
                }
                case UnknownProcess u -> {
                    if (fresh) {
                        violations.get("unknown-process").increment();
                        String message = unknown(u);
                        LOG.warnf("backstop: %s", message);
                        u.owner().ifPresent(o -> tell(o, podsByUid, GPU_WITHOUT_SHARE, message));
                    }
                }
            }
        }
        faultedBefore = now;
        roundsAtFault = rounds;
    }

    /** Ends these processes of a container at fault; the pids of those ended. */
    private List<String> end(List<ProcessKey> processes, String owner, String why) {
        List<String> ended = new ArrayList<>();
        for (ProcessKey k : processes) {
            Track t = tracks.get(k);
            ProcessKiller.Outcome o = killer.kill(k.pid(), k.startTicks(), t == null ? Optional.empty() : t.container);
            kills.get(o).increment();
            LOG.warnf("backstop: %s of %s %s: %s", k, owner, why, o.label());
            if (o == ProcessKiller.Outcome.KILLED) {
                ended.add("pid " + k.pid());
            }
        }
        return ended;
    }

    private void sm(SmExcess s, boolean fresh, int inARow, Map<String, PodView> podsByUid) {
        if (fresh) {
            violations.get("sm").increment();
        }
        int after = settings.killComputeAfterRounds();
        boolean due = after > 0 && inARow >= after && source.shareTrusted() && !s.toEnd().isEmpty();
        List<String> ended = due ? end(s.toEnd(), s.owner(), "uses the GPU beyond its container's SM limit") : List.of();
        if (fresh || !ended.isEmpty()) {
            String message = smMessage(s, ended, inARow);
            LOG.warnf("backstop: %s: %s", s.owner(), message);
            tell(s.owner(), podsByUid, SHARE_EXCEEDED, message);
        }
    }

    private void memory(MemoryExcess m, boolean fresh, Map<String, PodView> podsByUid) {
        if (fresh) {
            violations.get("memory").increment();
        }
        List<String> ended = settings.killMemoryExcess()
                ? end(m.toEnd(), m.owner(), "holds GPU memory beyond its container's share") : List.of();
        if (fresh || !ended.isEmpty()) {
            String message = memoryMessage(m, ended);
            LOG.warnf("backstop: %s: %s", m.owner(), message);
            tell(m.owner(), podsByUid, SHARE_EXCEEDED, message);
        }
    }

    /** An event on the pod of a container named "namespace/pod/container". */
    private void tell(String owner, Map<String, PodView> podsByUid, String reason, String message) {
        String[] parts = owner.split("/", 3);
        if (parts.length != 3) {
            return;
        }
        String uid = podsByUid.values().stream().filter(p -> p.namespace().equals(parts[0]) && p.name().equals(parts[1]))
                .map(PodView::uid).findFirst().orElse("");
        recorder.record(PodEvent.warning(parts[0], parts[1], uid, reason, "container " + parts[2] + ": " + message));
    }

    private static String memoryMessage(MemoryExcess m, List<String> ended) {
        String processes = m.processes().stream().map(u -> "pid " + u.process().pid() + " " + u.memoryBytes() / MIB + " MiB")
                .collect(Collectors.joining(", "));
        String action = ended.isEmpty()
                ? (m.toEnd().isEmpty() ? "" : "; not ended (" + m.toEnd().stream().map(k -> "pid " + k.pid())
                        .collect(Collectors.joining(", ")) + ")")
                : "; ended " + String.join(", ", ended) + " (SIGKILL)";
        return m.heldBytes() / MIB + " MiB of GPU memory on " + m.gpu() + " as the GPU reports it, all its processes "
                + "together (" + processes + "), beyond its share of " + m.shareBytes() / MIB + " MiB (dilu.io/gpu-memory) "
                + "and one driver context's allowance (bound " + m.boundBytes() / MIB + " MiB)" + action;
    }

    private String smMessage(SmExcess s, List<String> ended, int inARow) {
        String processes = s.processes().stream().filter(u -> u.share() > 0)
                .map(u -> String.format(Locale.ROOT, "pid %d %.0f%%", u.process().pid(), 100 * u.share()))
                .collect(Collectors.joining(", "));
        String seen = s.launchesSeen() < 0 ? "" : "; its hook counted " + s.launchesSeen() + " thread blocks";
        String what = s.measure() == ShareBackstop.Measure.SM_SHARE
                ? String.format(Locale.ROOT, "ran %.0f%% of %s's thread blocks over %ds (%s), beyond its SM limit of "
                        + "%.0f%% (at fault above %.0f%%)", 100 * s.share(), s.gpu(), s.window().toSeconds(), processes,
                        100 * s.smLimit(), 100 * s.bound())
                : String.format(Locale.ROOT, "kept %s busy %.0f%% of %ds as NVML reports it (%s%s), beyond its SM limit "
                        + "of %.0f%% (at fault above %.0f%% of the time)", s.gpu(), 100 * s.share(),
                        s.window().toSeconds(), processes, s.overlap() > 1 ? String.format(Locale.ROOT,
                                "; its part of the GPU's time, the GPU's containers read busy %.0f%% together",
                                100 * s.overlap()) : "", 100 * s.smLimit(), 100 * s.bound());
        String waits = s.behind().map(b -> "; not ended while " + b + " on the same GPU is further beyond its bound")
                .orElse("");
        String action = ended.isEmpty() ? "" : "; ended " + String.join(", ", ended) + " (SIGKILL) after " + inARow
                + " rounds at fault";
        return what + seen + waits + action;
    }

    private static String unknown(UnknownProcess u) {
        String whose = u.owner().map(o -> "of container " + o + ", which holds no dilu.io/gpu-sm share of it")
                .orElse("of no container this node gave a share");
        return u.process() + " " + whose + ", on the GPU for " + u.seenFor().toSeconds() + "s, holding "
                + u.memoryBytes() / MIB + " MiB";
    }

    /** For tests: the processes the backstop follows. */
    synchronized Set<ProcessKey> followed() {
        return Set.copyOf(tracks.keySet());
    }
}
