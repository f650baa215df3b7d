package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.Mount;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jboss.logging.Logger;

/**
 * The containers this node has handed GPU shares to: each allocation's control block, its token-loop tenants and,
 * in its directory, its {@link AllocationFile}, from which {@link #recover} takes it back after an agent restart.
 * Where a share lies on the node's GPUs is {@link ShareLayout}'s.
 *
 * <p>At Allocate the owner is guessed by {@link PodMatcher}; the {@link Reconciler}'s changes, applied
 * through {@link #apply}, confirm or correct it from the kubelet's PodResources API and release shares no
 * container holds any more. Until an owner is known a share is best-effort with the default limit.
 */
public final class Allocations implements GpuSmDevicePlugin.Allocator {

    private static final Logger LOG = Logger.getLogger(Allocations.class);

    /**
     * Where control blocks live on the host and in containers.
     *
     * @param controlRoot host directory of the control-block directories
     * @param containerControlDir where a container sees its control block
     * @param hookHostPath the hook library on the host
     * @param hookContainerPath where containers see it
     * @param preloadHostPath the /etc/ld.so.preload containers get
     * @param emulatorHostDir with emulated GPUs, the host directory of their state: one directory per GPU,
     *     shared by the containers on that GPU (empty with real GPUs)
     */
    public record Paths(Path controlRoot, String containerControlDir, String hookHostPath, String hookContainerPath,
            Path preloadHostPath, Optional<Path> emulatorHostDir) {
        public static Paths of(NodeAgentConfig config) {
            return new Paths(config.controlRoot(), config.containerControlDir(), config.hookHostPath(),
                    config.hookContainerPath(), config.preloadHostPath(),
                    config.emulatedGpus().map(gpus -> config.emulatorHostDir()));
        }
    }

    /** Where a container with an emulated GPU finds that GPU's state (DILU_EMU_DIR of the emulated driver). */
    public static final String EMULATOR_CONTAINER_DIR = "/var/run/dilu-emu";

    private final Paths config;
    private final GpuSmDevicePlugin.DeviceListStrategy deviceList;
    private final ShareLayout layout;
    private final TokenManager tokens;
    private final InstantSource clock;
    private final NodePods pods;
    private final Map<String, Allocation> byId = new LinkedHashMap<>();
    /** Per allocation, one tenant per device of its control block (several for a split container). */
    private final Map<String, List<Tenant>> tenants = new HashMap<>();
    private final Map<String, Path> dirs = new HashMap<>();
    /** Pods of this node the autoscaler parked ({@code dilu.io/parked}), as the pod watch last said. */
    private final Set<ContainerRef.PodKey> parked = new java.util.HashSet<>();

    /**
     * @param pods the pods on this node, to guess which container an Allocate is for
     */
    /** Under the control root: one directory per GPU of its booked containers' cycle pages (hard links). */
    static final String NEIGHBOURS = "neighbours";

    public Allocations(Paths config, List<GpuDevice> gpus, TokenManager tokens, InstantSource clock, NodePods pods) {
        this(config, GpuSmDevicePlugin.DeviceListStrategy.VOLUME_MOUNTS, gpus, tokens, clock, pods);
    }

    /** @param deviceList how Allocate names the container's GPUs to the NVIDIA container toolkit */
    public Allocations(Paths config, GpuSmDevicePlugin.DeviceListStrategy deviceList, List<GpuDevice> gpus,
            TokenManager tokens, InstantSource clock, NodePods pods) {
        this.config = config;
        this.deviceList = deviceList;
        this.layout = new ShareLayout(gpus);
        this.tokens = tokens;
        this.clock = clock;
        this.pods = pods;
    }

    /**
     * The KLC threshold the node's token loops hold an SLO share to when its pod names none: a pod's own below it
     * needs the quota right ({@link Allocation.ShareQuota#of}).
     */
    public double nodeThreshold() {
        return tokens.etaViolation();
    }

    /** Takes back the allocations of a previous run from the control root. */
    public synchronized int recover() throws IOException {
        Files.createDirectories(config.controlRoot());
        writePreload();
        int recovered = 0;
        try (Stream<Path> list = Files.list(config.controlRoot())) {
            for (Path dir : list.filter(Files::isDirectory).filter(d -> !d.getFileName().toString().equals(NEIGHBOURS))
                    .sorted().toList()) {
                Optional<AllocationFile.Named> named = AllocationFile.named(dir.getFileName().toString())
                        .filter(n -> layout.indexOf(n.gpu()) >= 0);
                if (named.isEmpty()) {
                    LOG.warnf("ignoring %s: not a control block of this node's GPUs", dir);
                    continue;
                }
                try {
                    Allocation a = AllocationFile.read(dir, named.get().id(), named.get().gpu());
                    if (layout.devices(a).stream().anyMatch(d -> d.gpu() < 0)) {
                        throw new IllegalArgumentException("a device lies on a GPU this node does not have");
                    }
                    ControlBlock block = ControlBlock.open(dir);
                    track(a, dir, block);
                    recovered++;
                } catch (IOException | IllegalArgumentException | java.time.DateTimeException e) {
                    LOG.warnf("ignoring %s: %s", dir, e.getMessage());
                }
            }
        }
        return recovered;
    }

    /** The file mounted as /etc/ld.so.preload into every container with a share: it names the hook. */
    private void writePreload() throws IOException {
        Path file = config.preloadHostPath();
        Files.createDirectories(file.toAbsolutePath().getParent());
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, config.hookContainerPath() + "\n");
        Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private void track(Allocation a, Path dir, ControlBlock block) {
        List<Tenant> perDevice = tenantsOf(a, block);
        byId.put(a.id(), a);
        tenants.put(a.id(), perDevice);
        dirs.put(a.id(), dir);
        publishCycles(a, dir, perDevice);
        List<ShareLayout.Device> devices = layout.devices(a);
        for (int d = 0; d < devices.size(); d++) {
            block.setMemoryLimit(d, devices.get(d).memoryMib() << 20);
            tokens.gpu(devices.get(d).gpu()).add(perDevice.get(d));
        }
    }

    private List<Tenant> tenantsOf(Allocation a, ControlBlock block) {
        List<ShareLayout.Device> devices = layout.devices(a);
        List<Tenant> out = new ArrayList<>(devices.size());
        for (int d = 0; d < devices.size(); d++) {
            out.add(new Tenant(a.id(), block, d, devices.get(d).smRequest() / 100.0, devices.get(d).smLimit() / 100.0,
                    a.priority() == Priority.SLO, a.klcThreshold(), parked(a)));
        }
        return out;
    }

    private boolean parked(Allocation a) {
        return a.owner().map(o -> parked.contains(o.podKey())).orElse(false);
    }

    /**
     * The pod is parked, or no longer parked: the token loops of its shares learn it at once (from the pod watch's
     * event, not the next reconcile), so a parked pod's guarantee goes, and a woken one's comes back, within a period.
     */
    public synchronized void setParked(ContainerRef.PodKey pod, boolean isParked) {
        if (isParked ? !parked.add(pod) : !parked.remove(pod)) {
            return;
        }
        for (Allocation a : byId.values()) {
            if (a.owner().map(ContainerRef::podKey).filter(pod::equals).isPresent()) {
                List<Tenant> perDevice = tenantsOf(a, tenants.get(a.id()).getFirst().block());
                tenants.put(a.id(), perDevice);
                publishCycles(a, dirs.get(a.id()), perDevice);
                List<ShareLayout.Device> devices = layout.devices(a);
                for (int d = 0; d < devices.size(); d++) {
                    tokens.gpu(devices.get(d).gpu()).update(perDevice.get(d));
                }
                LOG.infof("allocation %s of %s/%s: %s", a.id(), pod.namespace(), pod.name(), isParked
                        ? "parked, nothing guaranteed" : "booked again");
            }
        }
    }

    /** Whether the allocation's pod is parked. */
    public synchronized boolean parked(String id) {
        Allocation a = byId.get(id);
        return a != null && parked(a);
    }

    /**
     * Creates the share. The owner is guessed from the watch's pods, or, when none of them can be the one
     * being admitted (the watch lags on a loaded node), from the API server read outside the lock. A share on
     * several GPUs is refused unless it is for a container the scheduler split over exactly those GPUs: a pod
     * that did not opt in to pipeline stages must not run on GPUs it was not placed on.
     *
     * @throws IllegalArgumentException for a share on several GPUs that no split container asked for
     */
    @Override
    public ContainerAllocateResponse allocate(List<GpuDevice> gpus, List<String> deviceIds) {
        int smPercent = deviceIds.size();
        Set<String> uuids = gpus.stream().map(GpuDevice::uuid).collect(Collectors.toSet());
        java.util.function.Predicate<PodMatcher.Candidate> mayHold = c -> uuids.size() == 1 || c.stages().keySet().equals(uuids);
        Optional<PodMatcher.Candidate> guess = guessOwner(pods.seen(), uuids, smPercent).filter(mayHold);
        if (guess.isEmpty()) {
            guess = guessOwner(pods.read(), uuids, smPercent);
        }
        if (!guess.map(mayHold::test).orElse(uuids.size() == 1)) {
            throw new IllegalArgumentException("a dilu.io/gpu-sm share on " + uuids.size() + " GPUs " + new java.util.TreeSet<>(uuids)
                    + " is for a container split into pipeline stages over exactly those GPUs (dilu.io/split), and no such "
                    + "container waits on this node");
        }
        return create(gpus, deviceIds, guess);
    }

    /**
     * Refuses a share that would guarantee more of a GPU than it has, beside the shares guaranteed there already. The
     * scheduler extender books no more than the GPU (Σ request ≤ Ω), but a pod bound around it (by hand, in a namespace
     * whose webhook was down: its failurePolicy is Ignore) reaches the kubelet, which counts only the 1000 IDs per GPU
     * ({@link DiluNames#GPU_SM_IDS_PER_GPU}); the token loop would then shrink every guarantee to fit (issue 45, harm 8:
     * nine 100% containers left a 50% SLO neighbour 41.1% of its GPU). Guaranteed: a share not parked, still listed by
     * the kubelet, whose pod the watch still sees running (or not matched to a pod yet). The kubelet fails the refused
     * pod's admission (UnexpectedAdmissionError).
     */
    private void refuseBeyondTheGpu(List<String> deviceIds) {
        Map<String, Integer> asked = new LinkedHashMap<>();
        deviceIds.forEach(d -> asked.merge(GpuSmDevicePlugin.gpuOf(d), 1, Integer::sum));
        Set<ContainerRef.PodKey> running = pods.seen().stream().filter(p -> !p.terminal())
                .map(p -> new ContainerRef.PodKey(p.namespace(), p.name())).collect(Collectors.toSet());
        Map<String, Integer> guaranteed = new HashMap<>();
        for (Allocation a : byId.values()) {
            boolean live = a.owner().map(o -> running.contains(o.podKey())).orElse(true);
            if (live && !parked(a) && a.missingSince().isEmpty()) {
                a.deviceIds().forEach(d -> guaranteed.merge(GpuSmDevicePlugin.gpuOf(d), 1, Integer::sum));
            }
        }
        for (Map.Entry<String, Integer> e : asked.entrySet()) {
            int there = guaranteed.getOrDefault(e.getKey(), 0);
            if (there + e.getValue() > Quota.MAX_SM) {
                throw new IllegalArgumentException("dilu.io/gpu-sm=" + e.getValue() + " on " + e.getKey() + " is refused: "
                        + "the shares guaranteed there hold " + there + "%, and together they must stay within "
                        + Quota.MAX_SM + "% of the GPU (a pod placed around dilu-scheduler?)");
            }
        }
    }

    /** A share on one GPU. */
    public ContainerAllocateResponse allocate(GpuDevice gpu, List<String> deviceIds) {
        return allocate(List.of(gpu), deviceIds);
    }

    private synchronized Optional<PodMatcher.Candidate> guessOwner(Collection<PodView> pods, Set<String> gpus, int smPercent) {
        return PodMatcher.forAllocate(pods, owned(), gpus, smPercent);
    }

    private synchronized ContainerAllocateResponse create(List<GpuDevice> unordered, List<String> deviceIds,
            Optional<PodMatcher.Candidate> guess) {
        int smPercent = deviceIds.size();
        refuseBeyondTheGpu(deviceIds);
        List<GpuDevice> gpus = layout.inOrder(unordered);
        GpuDevice gpu = gpus.getFirst();
        String id = UUID.randomUUID().toString();
        Path dir = config.controlRoot().resolve(AllocationFile.directory(gpu.uuid(), smPercent, id));
        Allocation a = new Allocation(id, gpu.uuid(), Set.copyOf(deviceIds), clock.instant(), Optional.empty(),
                Allocation.ShareQuota.defaults(smPercent), Optional.empty());
        if (guess.isPresent()) {
            PodView pod = guess.get().pod();
            Allocation.ShareQuota quota = pod.container(guess.get().ref().container())
                    .map(c -> Allocation.ShareQuota.of(pod, c, nodeThreshold())).orElse(a.quota());
            a = a.withOwner(guess.get().ref(), quota);
        }
        try {
            ControlBlock block = ControlBlock.create(dir, gpus.size());
            block.createCyclePage();
            Files.createDirectories(neighbours(gpu.uuid()));
            block.heartbeat(System.nanoTime());
            AllocationFile.write(dir, a);
            track(a, dir, block);
        } catch (IOException e) {
            deleteQuietly(dir);
            throw new UncheckedIOException("cannot create the control block " + dir, e);
        }
        LOG.infof("allocated %d%% of %s as %s to %s", smPercent,
                gpus.stream().map(GpuDevice::uuid).collect(Collectors.joining(", ")), id,
                a.owner().map(ContainerRef::toString).orElse("a container not known yet"));
        ContainerAllocateResponse.Builder response = ContainerAllocateResponse.newBuilder()
                .putEnvs("DILU_SM_REQUEST", Integer.toString(smPercent))
                .putEnvs("DILU_SM_LIMIT", Integer.toString(a.smLimit()))
                .putEnvs("DILU_ALLOCATION", id)
                .addAllMounts(GpuSmDevicePlugin.controlMounts(dir.toString(), config.containerControlDir(),
                        config.hookHostPath(), config.hookContainerPath(), config.preloadHostPath().toString()))
                .addAllMounts(GpuSmDevicePlugin.cycleMounts(dir.toString(), neighbours(gpu.uuid()).toString(),
                        config.containerControlDir()));
        deviceList.apply(response, gpus.stream().map(GpuDevice::uuid).toList());
        // An emulated GPU's state holds one device: a split container sees the first of its GPUs there (its
        // control block still grants and accounts each of them).
        config.emulatorHostDir().ifPresent(root -> emulatedGpu(response, root, gpu));
        return response.build();
    }

    /**
     * Emulated GPUs only: the GPU's shared state, as the NVIDIA runtime would hand a container its device. The
     * emulated driver in the container then shows the inventory's model, memory and SMs.
     */
    private static void emulatedGpu(ContainerAllocateResponse.Builder response, Path root, GpuDevice gpu) {
        Path dir = root.resolve("gpu" + gpu.index());
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the emulated GPU's directory " + dir, e);
        }
        response.addMounts(Mount.newBuilder().setHostPath(dir.toString()).setContainerPath(EMULATOR_CONTAINER_DIR)
                        .setReadOnly(false))
                .putEnvs("DILU_EMU_DIR", EMULATOR_CONTAINER_DIR)
                .putEnvs("DILU_EMU_MODEL", gpu.model())
                .putEnvs("DILU_EMU_MEMORY_MIB", Long.toString(gpu.memoryMib()))
                .putEnvs("DILU_EMU_SMS", Integer.toString(gpu.smCount()));
    }

    /**
     * Where the scheduler put the container being admitted — one GPU, or the stages of a split container,
     * percent by GPU — from the watch's pods or else the API server's.
     */
    @Override
    public Optional<Map<String, Integer>> preferredShares(int size, Map<String, Integer> available) {
        Optional<Map<String, Integer>> shares = preferredShares(pods.seen(), size, available);
        return shares.isPresent() ? shares : preferredShares(pods.read(), size, available);
    }

    private synchronized Optional<Map<String, Integer>> preferredShares(Collection<PodView> pods, int size,
            Map<String, Integer> available) {
        return PodMatcher.preferredShares(pods, owned(), size, available);
    }

    private Set<ContainerRef> owned() {
        return byId.values().stream().flatMap(a -> a.owner().stream()).collect(Collectors.toSet());
    }

    /** Applies the reconciler's changes to shares (annotation corrections are for the caller). */
    public synchronized void apply(List<Reconciler.Change> changes) {
        for (Reconciler.Change change : changes) {
            switch (change) {
                case Reconciler.Bind b -> update(b.allocation(), a -> a.withOwner(b.owner(), b.quota()));
                case Reconciler.Missing m -> update(m.allocation(), a -> a.withMissingSince(Optional.of(m.since())));
                case Reconciler.Present p -> update(p.allocation(), a -> a.withMissingSince(Optional.empty()));
                case Reconciler.Release r -> release(r.allocation());
                case Reconciler.CorrectAnnotation c -> { }
            }
        }
    }

    private void update(String id, java.util.function.UnaryOperator<Allocation> change) {
        Allocation before = byId.get(id);
        if (before == null) {
            return;
        }
        Allocation after = change.apply(before);
        try {
            AllocationFile.write(dirs.get(id), after);
        } catch (IOException e) {
            // The running share changes anyway; a restart would re-learn the owner from the kubelet.
            LOG.warnf("cannot record allocation %s on disk: %s", id, e.getMessage());
        }
        byId.put(id, after);
        ControlBlock block = tenants.get(id).getFirst().block();
        List<Tenant> perDevice = tenantsOf(after, block);
        List<ShareLayout.Device> devices = layout.devices(after);
        tenants.put(id, perDevice);
        publishCycles(after, dirs.get(id), perDevice);
        for (int d = 0; d < devices.size(); d++) {
            block.setMemoryLimit(d, devices.get(d).memoryMib() << 20);
            tokens.gpu(devices.get(d).gpu()).update(perDevice.get(d));
        }
        if (!before.owner().equals(after.owner()) || !before.quota().same(after.quota())) {
            LOG.infof("allocation %s: %s, limit %d%%, %s, KLC threshold %s, memory %d MiB", id,
                    after.owner().map(ContainerRef::toString).orElse("?"), after.smLimit(), after.priority().label(),
                    Double.isNaN(after.klcThreshold()) ? "default" : after.klcThreshold(), after.memoryMib());
        }
    }

    private void release(String id) {
        Allocation a = byId.remove(id);
        if (a == null) {
            return;
        }
        layout.devices(a).forEach(d -> tokens.gpu(d.gpu()).remove(id));
        tenants.remove(id);
        Path dir = dirs.remove(id);
        unpublishCycles(a);
        deleteQuietly(dir);
        LOG.infof("released allocation %s (%d%% of %s, last held by %s)", id, a.smRequest(), a.gpu(),
                a.owner().map(ContainerRef::toString).orElse("no known container"));
    }

    /** The directory of the cycle pages of a GPU's booked containers, mounted read-only into every container on it. */
    private Path neighbours(String gpuUuid) {
        return config.controlRoot().resolve(NEIGHBOURS).resolve(gpuUuid);
    }

    /**
     * A container that is not parked has its cycle page linked into its GPU's neighbours directory under its class
     * (SLO or best-effort), where its neighbours' hooks find it; a parked one has it unlinked. The agent alone decides
     * what is there and under which class: a tenant writes only its own page.
     */
    private void publishCycles(Allocation a, Path dir, List<Tenant> perDevice) {
        Tenant first = perDevice.getFirst();
        Path link = neighbours(a.gpu()).resolve(ControlBlock.neighbourName(first.sloSensitive(), a.id()));
        Path other = neighbours(a.gpu()).resolve(ControlBlock.neighbourName(!first.sloSensitive(), a.id()));
        Path page = dir.resolve(ControlBlock.CYCLE_FILE);
        try {
            Files.deleteIfExists(other);
            if (!first.parked() && Files.exists(page)) {
                if (!Files.exists(link)) {
                    Files.createDirectories(link.getParent());
                    Files.createLink(link, page);
                }
            } else {
                Files.deleteIfExists(link);
            }
        } catch (IOException e) {
            // Its neighbours then do not yield to it: tokens alone protect its cycles, as before yielding.
            LOG.warnf("allocation %s: cannot publish its launch cycles in %s: %s", a.id(), link, e.getMessage());
        }
    }

    private void unpublishCycles(Allocation a) {
        try {
            for (boolean slo : new boolean[] {true, false}) {
                Files.deleteIfExists(neighbours(a.gpu()).resolve(ControlBlock.neighbourName(slo, a.id())));
            }
        } catch (IOException e) {
            LOG.warnf("allocation %s: cannot unlink its cycle page: %s", a.id(), e.getMessage());
        }
    }

    private static void deleteQuietly(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            LOG.warnf("cannot remove %s: %s", dir, e.getMessage());
        }
    }

    /** The allocations, by id. */
    public synchronized Map<String, Allocation> all() {
        return Map.copyOf(byId);
    }

    /** The token loop's view of each allocation, by id, on its first device: for metrics. */
    public synchronized Map<String, Tenant> tenants() {
        Map<String, Tenant> first = new HashMap<>();
        tenants.forEach((id, perDevice) -> first.put(id, perDevice.getFirst()));
        return first;
    }

    /**
     * A share's part of one GPU, with what the token loop of that GPU sees of it: for events.
     *
     * @param gpu the GPU's index on this node
     */
    public record Part(Allocation allocation, int gpu, String uuid, Tenant tenant, long memoryMib) {}

    /** Every share's parts, one per GPU it holds (several for a split container). */
    public synchronized List<Part> parts() {
        List<Part> parts = new ArrayList<>();
        byId.forEach((id, a) -> {
            List<ShareLayout.Device> devices = layout.devices(a);
            List<Tenant> perDevice = tenants.get(id);
            for (int d = 0; d < devices.size() && d < perDevice.size(); d++) {
                ShareLayout.Device device = devices.get(d);
                parts.add(new Part(a, device.gpu(), device.uuid(), perDevice.get(d), device.memoryMib()));
            }
        });
        return parts;
    }
}
