package io.dilu.deviceplugin.agent;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Priority;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.backstop.Cgroups;
import io.dilu.deviceplugin.backstop.EmulatedProcesses;
import io.dilu.deviceplugin.backstop.GpuProcesses;
import io.dilu.deviceplugin.backstop.ProcFs;
import io.dilu.deviceplugin.backstop.ProcessKiller;
import io.dilu.deviceplugin.backstop.RecordedNvml;
import io.dilu.deviceplugin.control.FakeHook;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.kube.events.EventCounts;
import io.dilu.kube.events.EventThrottle;
import io.dilu.kube.events.PodEventRecorder;
import io.dilu.testing.ShippedConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

/**
 * A node with one GPU and the real backstop over it, for tests and the isolation bench: real processes, the real
 * /proc for what the kernel says of them, and, standing for the kubelet's cgroups, a cgroup file per process that the
 * test writes (a process it starts "in a container" gets {@code /kubepods/burstable/pod<uid>/<id>}). The GPU is an
 * emulated one (its state in {@code <work>/emulated-gpus/gpu0}, as the agent hands it to containers, read as the
 * agent reads it), or an H100 as NVML answered for the processes of a recording ({@link #overRecordedNvml}).
 */
public final class TestingBackstop implements AutoCloseable {

    /** 5,400 blocks per 5 ms: an emulated A100's 108 SMs. */
    private static final TokenParameters PARAMS = TokenParameters.DEFAULTS.withMaxTokens(5_400);

    private final Path work;
    private final GpuDevice gpu = new GpuDevice("GPU-emu-backstop-0", 0, "A100-40GB", 40_960, 108);
    private final Path cgroups;
    private final TokenManager tokens;
    private final Allocations allocations;
    private final Map<String, PodView> pods = new HashMap<>();
    private final List<Event> events = new CopyOnWriteArrayList<>();
    private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    private final Backstop backstop;
    private final PodEventRecorder recorder;
    private final ProcFs proc;
    private final List<Process> started = new ArrayList<>();
    private int nextDevice;
    private double longestRound;

    /** A container of a pod on this node, as the runtime names it. */
    public record Container(ContainerRef ref, Cgroups.ContainerId id) {}

    /** The backstop's settings as the agent ships them, with {@code keys} (e.g. dilu.agent.backstop.sm-window) over them. */
    public static NodeAgentConfig.BackstopConfig shipped(Map<String, String> keys) {
        return ShippedConfig.read(NodeAgentConfig.class, keys).backstop();
    }

    /**
     * Over an emulated GPU, SM kills after the shipped three rounds at fault: which the backstop never makes there, the
     * emulator's figures being the tenants' to write ({@link GpuProcesses#shareTrusted()}).
     */
    public TestingBackstop(Path work, ShareBackstop.Bounds bounds, boolean killMemoryExcess) throws IOException {
        this(work, new Backstop.Settings(bounds, killMemoryExcess, 3), null, InstantSource.system());
    }

    /**
     * Over NVML's answers recorded on an H100 ({@link RecordedNvml}), judged at {@code clock}'s time: what the driver
     * would say of the test's processes, each given a role of the recording. Memory and SM faults end processes as the
     * agent's shipped settings do (SM after {@code killComputeAfterRounds} rounds at fault).
     */
    public static TestingBackstop overRecordedNvml(Path work, ShareBackstop.Bounds bounds, int killComputeAfterRounds,
            RecordedNvml nvml, InstantSource clock) throws IOException {
        return new TestingBackstop(work, new Backstop.Settings(bounds, true, killComputeAfterRounds), nvml.reader(), clock);
    }

    private TestingBackstop(Path work, Backstop.Settings settings, GpuProcesses source, InstantSource clock)
            throws IOException {
        this.work = work;
        this.cgroups = Files.createDirectories(work.resolve("cgroups"));
        Files.createDirectories(gpuDir());
        this.tokens = new TokenManager(1, PARAMS, 1, InstantSource.system(), 64);
        this.allocations = new Allocations(new Allocations.Paths(Files.createDirectories(work.resolve("containers")),
                "/var/run/dilu/control", "/opt/dilu/lib/libdilu-hook.so", "/opt/dilu/lib/libdilu-hook.so",
                work.resolve("ld.so.preload"), Optional.of(work.resolve("emulated-gpus"))), List.of(gpu), tokens,
                InstantSource.system(), () -> List.copyOf(pods.values()));
        allocations.recover();
        this.proc = new ProcFs(Path.of("/proc"), cgroups);
        this.recorder = new PodEventRecorder(new PodEventRecorder.Source("dilu-node-agent", "node", "node"),
                new EventThrottle(Duration.ofMinutes(1), 30, 1024), clock, events::add, Runnable::run,
                new EventCounts(metrics, List.of(Backstop.SHARE_EXCEEDED, Backstop.GPU_WITHOUT_SHARE)));
        double perSecond = PARAMS.maxTokens() * (1e9 / PARAMS.period().toNanos());
        GpuProcesses gpus = source != null ? source
                : new EmulatedProcesses(List.of(gpu), work.resolve("emulated-gpus"), proc, new double[] {perSecond});
        this.backstop = new Backstop(gpus, List.of(gpu), proc, new ProcessKiller(proc), allocations,
                () -> List.copyOf(pods.values()), recorder, clock, settings, metrics);
    }

    /** The emulated GPU's directory: DILU_EMU_DIR of its processes. */
    public Path gpuDir() {
        return work.resolve("emulated-gpus").resolve("gpu0");
    }

    public String gpuUuid() {
        return gpu.uuid();
    }

    /**
     * A pod with containers of these names, running; the first {@code shares} of them hold a share of the GPU:
     * {@code smPercent} each, {@code memoryMib} of memory.
     */
    public List<Container> pod(String namespace, String name, int shares, int smPercent, long memoryMib,
            String... containers) {
        String uid = UUID.randomUUID().toString();
        Map<String, String> ids = new HashMap<>();
        List<Container> out = new ArrayList<>();
        for (String c : containers) {
            String id = randomContainerId();
            ids.put(id, c);
            out.add(new Container(new ContainerRef(namespace, name, c), new Cgroups.ContainerId(uid, id)));
        }
        List<PodView.GpuContainer> gpuContainers = IntStream.range(0, shares)
                .mapToObj(i -> new PodView.GpuContainer(containers[i], smPercent, memoryMib)).toList();
        pods.put(uid, new PodView(namespace, name, uid, Instant.now(), false, Map.of(), gpuContainers, false, ids));
        for (int i = 0; i < shares; i++) {
            int first = nextDevice;
            nextDevice += smPercent;
            String allocation = allocations.allocate(gpu, IntStream.range(first, first + smPercent)
                    .mapToObj(p -> gpu.uuid() + "::sm" + String.format("%02d", p)).toList()).getEnvsOrThrow("DILU_ALLOCATION");
            allocations.apply(List.of(new Reconciler.Bind(allocation, out.get(i).ref(),
                    new Allocation.ShareQuota(smPercent, Priority.BEST_EFFORT, Double.NaN, memoryMib), false)));
        }
        return out;
    }

    private static String randomContainerId() {
        String hex = UUID.randomUUID().toString().replace("-", "") + UUID.randomUUID().toString().replace("-", "");
        return hex.substring(0, 64);
    }

    /** Starts {@code command} on the emulated GPU, without the hook, in {@code container} (or in none). */
    public Process start(Optional<Container> container, List<String> command) throws IOException {
        return startIn(gpuDir(), container, command);
    }

    /** As {@link #start}, with the emulator's state looked for in {@code emulatorDir} (DILU_EMU_DIR). */
    public Process startIn(Path emulatorDir, Optional<Container> container, List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(work.resolve("out-" + started.size() + ".txt").toFile());
        pb.environment().put("DILU_EMU_DIR", emulatorDir.toString());
        pb.environment().put("DILU_EMU_LOG", "off");
        pb.environment().remove("LD_PRELOAD");
        Process p = pb.start();
        started.add(p);
        if (container.isPresent()) {
            putInCgroup(p.pid(), container.get().id());
        }
        return p;
    }

    /** What the container's hook reports it has launched, in thread blocks, as its hook would write it. */
    public void hookLaunched(Container container, long blocks) throws IOException {
        for (Allocations.Part part : allocations.parts()) {
            if (part.allocation().owner().filter(container.ref()::equals).isPresent()) {
                FakeHook.of(part.tenant().block()).report(blocks, 0);
                return;
            }
        }
        throw new IllegalArgumentException(container.ref() + " holds no share on this node");
    }

    /** Writes the cgroup file the backstop reads for {@code pid}, as the kubelet's cgroupfs layout would have it. */
    public void putInCgroup(long pid, Cgroups.ContainerId id) throws IOException {
        Path dir = Files.createDirectories(cgroups.resolve(Long.toString(pid)));
        Files.writeString(dir.resolve("cgroup"), "0::/kubepods/burstable/pod" + id.podUid() + "/" + id.containerId() + "\n");
    }

    /** A memory sweep between rounds, as the agent runs one every {@code memory-interval}. */
    public List<ShareBackstop.Fault> sweep() {
        return backstop.sweep();
    }

    public List<ShareBackstop.Fault> round() {
        long t0 = System.nanoTime();
        try {
            return backstop.round();
        } finally {
            longestRound = Math.max(longestRound, (System.nanoTime() - t0) / 1e9);
        }
    }

    /** The longest a round has taken, in seconds. */
    public double longestRoundSeconds() {
        return longestRound;
    }

    /** How many processes on the GPU the backstop follows. */
    public int followed() {
        return backstop.followed().size();
    }

    /** Writes the Events the throttle held (one per pod and reason a minute) whose minute is over, as the agent does. */
    public void flushEvents() {
        recorder.flush();
    }

    /** The Events written, as the API server would have received them. */
    public List<Event> events() {
        return List.copyOf(events);
    }

    public double counter(String name, String tag, String value) {
        var c = metrics.find(name).tag(tag, value).counter();
        return c == null ? 0 : c.count();
    }

    public ProcFs proc() {
        return proc;
    }

    public ProcessKiller killer() {
        return new ProcessKiller(proc);
    }

    @Override
    public void close() {
        started.forEach(Process::destroyForcibly);
        try {
            tokens.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
