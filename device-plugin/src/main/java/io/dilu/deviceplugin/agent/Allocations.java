package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.Mount;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jboss.logging.Logger;

/**
 * The containers this node has handed GPU shares to. Each allocation gets a control-block directory under
 * the control root, named {@code <gpu-uuid>_<smPercent>_<id>}, holding beside the control block an
 * {@code allocation.properties} with the device IDs, the owner and the quota: after an agent restart the
 * directory alone says whose share it is, so nothing is lost with the process. The file is not mounted into
 * the container; only {@code grant} and {@code report} are.
 *
 * <p>At Allocate the owner is guessed by {@link PodMatcher}; the {@link Reconciler}'s changes, applied
 * through {@link #apply}, confirm or correct it from the kubelet's PodResources API and release shares no
 * container holds any more. Until an owner is known a share is best-effort with the default limit.
 */
public final class Allocations implements GpuSmDevicePlugin.Allocator {

    private static final Logger LOG = Logger.getLogger(Allocations.class);
    static final String STATE_FILE = "allocation.properties";

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
    private final List<GpuDevice> gpus;
    private final TokenManager tokens;
    private final InstantSource clock;
    private final NodePods pods;
    private final Map<String, Allocation> byId = new LinkedHashMap<>();
    private final Map<String, Tenant> tenants = new HashMap<>();
    private final Map<String, Path> dirs = new HashMap<>();

    /**
     * @param pods the pods on this node, to guess which container an Allocate is for
     */
    public Allocations(Paths config, List<GpuDevice> gpus, TokenManager tokens, InstantSource clock, NodePods pods) {
        this.config = config;
        this.gpus = List.copyOf(gpus);
        this.tokens = tokens;
        this.clock = clock;
        this.pods = pods;
    }

    /** Takes back the allocations of a previous run from the control root. */
    public synchronized int recover() throws IOException {
        Files.createDirectories(config.controlRoot());
        writePreload();
        int recovered = 0;
        try (Stream<Path> list = Files.list(config.controlRoot())) {
            for (Path dir : list.filter(Files::isDirectory).sorted().toList()) {
                String[] parts = dir.getFileName().toString().split("_");
                if (parts.length != 3 || indexOf(parts[0]) < 0) {
                    LOG.warnf("ignoring %s: not a control block of this node's GPUs", dir);
                    continue;
                }
                try {
                    Allocation a = read(dir.resolve(STATE_FILE), parts[2], parts[0]);
                    ControlBlock block = ControlBlock.open(dir);
                    block.setMemoryLimit(0, a.memoryMib() << 20);
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

    private int indexOf(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                return i;
            }
        }
        return -1;
    }

    private void track(Allocation a, Path dir, ControlBlock block) {
        Tenant tenant = tenantOf(a, block);
        byId.put(a.id(), a);
        tenants.put(a.id(), tenant);
        dirs.put(a.id(), dir);
        tokens.gpu(indexOf(a.gpu())).add(tenant);
    }

    private static Tenant tenantOf(Allocation a, ControlBlock block) {
        return new Tenant(a.id(), block, 0, a.smRequest() / 100.0, a.smLimit() / 100.0, a.priority() == Priority.SLO,
                a.klcThreshold());
    }

    /**
     * Creates the share. The owner is guessed from the watch's pods, or, when none of them can be the one
     * being admitted (the watch lags on a loaded node), from the API server read outside the lock.
     */
    @Override
    public ContainerAllocateResponse allocate(GpuDevice gpu, List<String> deviceIds) {
        int smPercent = deviceIds.size();
        Optional<PodMatcher.Candidate> guess = guessOwner(pods.seen(), gpu, smPercent);
        if (guess.isEmpty()) {
            guess = guessOwner(pods.read(), gpu, smPercent);
        }
        return create(gpu, deviceIds, guess);
    }

    private synchronized Optional<PodMatcher.Candidate> guessOwner(Collection<PodView> pods, GpuDevice gpu, int smPercent) {
        return PodMatcher.forAllocate(pods, owned(), gpu.uuid(), smPercent);
    }

    private synchronized ContainerAllocateResponse create(GpuDevice gpu, List<String> deviceIds,
            Optional<PodMatcher.Candidate> guess) {
        int smPercent = deviceIds.size();
        String id = UUID.randomUUID().toString();
        Path dir = config.controlRoot().resolve(gpu.uuid() + "_" + smPercent + "_" + id);
        Allocation a = new Allocation(id, gpu.uuid(), Set.copyOf(deviceIds), clock.instant(), Optional.empty(),
                Allocation.ShareQuota.defaults(smPercent), Optional.empty());
        if (guess.isPresent()) {
            PodView pod = guess.get().pod();
            Allocation.ShareQuota quota = pod.container(guess.get().ref().container())
                    .map(c -> Allocation.ShareQuota.of(pod, c)).orElse(a.quota());
            a = a.withOwner(guess.get().ref(), quota);
        }
        try {
            ControlBlock block = ControlBlock.create(dir, 1);
            block.setMemoryLimit(0, a.memoryMib() << 20);
            block.heartbeat(System.nanoTime());
            write(dir, a);
            track(a, dir, block);
        } catch (IOException e) {
            deleteQuietly(dir);
            throw new UncheckedIOException("cannot create the control block " + dir, e);
        }
        LOG.infof("allocated %d%% of %s as %s to %s", smPercent, gpu.uuid(), id,
                a.owner().map(ContainerRef::toString).orElse("a container not known yet"));
        ContainerAllocateResponse.Builder response = ContainerAllocateResponse.newBuilder()
                .putEnvs("NVIDIA_VISIBLE_DEVICES", gpu.uuid())
                .putEnvs("DILU_SM_REQUEST", Integer.toString(smPercent))
                .putEnvs("DILU_SM_LIMIT", Integer.toString(a.smLimit()))
                .putEnvs("DILU_ALLOCATION", id)
                .addAllMounts(GpuSmDevicePlugin.controlMounts(dir.toString(), config.containerControlDir(),
                        config.hookHostPath(), config.hookContainerPath(), config.preloadHostPath().toString()));
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

    /** The scheduler's GPU for the container being admitted, from the watch's pods or else the API server's. */
    @Override
    public Optional<String> preferredGpu(int size, Map<String, Integer> available) {
        Optional<String> gpu = preferredGpu(pods.seen(), size, available);
        return gpu.isPresent() ? gpu : preferredGpu(pods.read(), size, available);
    }

    private synchronized Optional<String> preferredGpu(Collection<PodView> pods, int size, Map<String, Integer> available) {
        return PodMatcher.preferredGpu(pods, owned(), size, available);
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
            write(dirs.get(id), after);
        } catch (IOException e) {
            // The running share changes anyway; a restart would re-learn the owner from the kubelet.
            LOG.warnf("cannot record allocation %s on disk: %s", id, e.getMessage());
        }
        byId.put(id, after);
        Tenant tenant = tenantOf(after, tenants.get(id).block());
        tenant.block().setMemoryLimit(0, after.memoryMib() << 20);
        tenants.put(id, tenant);
        tokens.gpu(indexOf(after.gpu())).update(tenant);
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
        tokens.gpu(indexOf(a.gpu())).remove(id);
        tenants.remove(id);
        Path dir = dirs.remove(id);
        deleteQuietly(dir);
        LOG.infof("released allocation %s (%d%% of %s, last held by %s)", id, a.smRequest(), a.gpu(),
                a.owner().map(ContainerRef::toString).orElse("no known container"));
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

    /** The token loop's view of each allocation, by id: for metrics. */
    public synchronized Map<String, Tenant> tenants() {
        return Map.copyOf(tenants);
    }

    // allocation.properties: small, human-readable, replaced atomically so a crash leaves the old or the new.

    private static void write(Path dir, Allocation a) throws IOException {
        Properties p = new Properties();
        p.setProperty("gpu", a.gpu());
        p.setProperty("devices", a.deviceIds().stream().sorted().collect(Collectors.joining(",")));
        p.setProperty("created", a.created().toString());
        p.setProperty("smLimit", Integer.toString(a.smLimit()));
        p.setProperty("priority", a.priority().label());
        if (!Double.isNaN(a.klcThreshold())) {
            p.setProperty("klcThreshold", Double.toString(a.klcThreshold()));
        }
        p.setProperty("memoryMib", Long.toString(a.memoryMib()));
        a.owner().ifPresent(o -> p.setProperty("owner", o.namespace() + "/" + o.pod() + "/" + o.container()));
        a.missingSince().ifPresent(t -> p.setProperty("missingSince", t.toString()));
        Path tmp = dir.resolve(STATE_FILE + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp)) {
            p.store(w, "Dilu node agent: one GPU share");
        }
        Files.move(tmp, dir.resolve(STATE_FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static Allocation read(Path file, String id, String gpu) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        String devices = required(p, "devices");
        Set<String> ids = Arrays.stream(devices.split(",")).map(String::strip).collect(Collectors.toSet());
        if (ids.stream().anyMatch(d -> !GpuSmDevicePlugin.gpuOf(d).equals(gpu))) {
            throw new IllegalArgumentException("devices " + devices + " do not all lie on " + gpu);
        }
        Optional<ContainerRef> owner = Optional.ofNullable(p.getProperty("owner")).map(o -> {
            String[] parts = o.split("/");
            if (parts.length != 3) {
                throw new IllegalArgumentException("owner " + o + " is not namespace/pod/container");
            }
            return new ContainerRef(parts[0], parts[1], parts[2]);
        });
        Priority priority = Priority.fromLabel(required(p, "priority"))
                .orElseThrow(() -> new IllegalArgumentException("priority " + p.getProperty("priority")));
        String threshold = p.getProperty("klcThreshold");
        long memory = Long.parseLong(p.getProperty("memoryMib", Long.toString(Allocation.DEFAULT_MEMORY_MIB)));
        return new Allocation(id, gpu, ids, Instant.parse(required(p, "created")), owner,
                new Allocation.ShareQuota(Integer.parseInt(required(p, "smLimit")), priority,
                        threshold == null ? Double.NaN
                                : PodQuotaAnnotations.klcThreshold(Map.of(DiluNames.KLC_THRESHOLD, threshold)), memory),
                Optional.ofNullable(p.getProperty("missingSince")).map(Instant::parse));
    }

    private static String required(Properties p, String key) {
        String v = p.getProperty(key);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(STATE_FILE + " has no " + key);
        }
        return v;
    }

}
