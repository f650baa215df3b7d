package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Quota;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.jboss.logging.Logger;

/**
 * The containers this node has handed GPU shares to. Each allocation gets a control-block directory
 * under the control root, named {@code <gpu-uuid>_<smPercent>_<id>}, so that after an agent restart the
 * directory alone says which GPU and share it belongs to: nothing is lost with the process.
 *
 * <p>Until the allocation is matched to its pod, its limit is the default {@code min(100, 2 × request)} and
 * it is treated as best-effort.
 */
public final class Allocations implements GpuSmDevicePlugin.Allocator {

    private static final Logger LOG = Logger.getLogger(Allocations.class);

    private final NodeAgentConfig config;
    private final List<GpuDevice> gpus;
    private final TokenManager tokens;
    private final Map<String, Tenant> byId = new ConcurrentHashMap<>();

    public Allocations(NodeAgentConfig config, List<GpuDevice> gpus, TokenManager tokens) {
        this.config = config;
        this.gpus = List.copyOf(gpus);
        this.tokens = tokens;
    }

    /** Takes back the allocations of a previous run from the control root. */
    public int recover() throws IOException {
        Files.createDirectories(config.controlRoot());
        int recovered = 0;
        try (Stream<Path> dirs = Files.list(config.controlRoot())) {
            for (Path dir : dirs.filter(Files::isDirectory).toList()) {
                String[] parts = dir.getFileName().toString().split("_");
                int gpu = parts.length == 3 ? indexOf(parts[0]) : -1;
                if (gpu < 0) {
                    LOG.warnf("ignoring %s: not a control block of this node's GPUs", dir);
                    continue;
                }
                try {
                    track(parts[2], gpu, Integer.parseInt(parts[1]), ControlBlock.open(dir));
                    recovered++;
                } catch (IOException | NumberFormatException e) {
                    LOG.warnf("ignoring %s: %s", dir, e.getMessage());
                }
            }
        }
        return recovered;
    }

    private int indexOf(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                return i;
            }
        }
        return -1;
    }

    private void track(String id, int gpu, int smPercent, ControlBlock block) {
        Tenant tenant = new Tenant(id, block, 0, smPercent / 100.0, Quota.defaultLimit(smPercent) / 100.0, false);
        byId.put(id, tenant);
        tokens.gpu(gpu).add(tenant);
    }

    @Override
    public ContainerAllocateResponse allocate(GpuDevice gpu, int smPercent) {
        String id = UUID.randomUUID().toString();
        Path dir = config.controlRoot().resolve(gpu.uuid() + "_" + smPercent + "_" + id);
        try {
            ControlBlock block = ControlBlock.create(dir, 1);
            block.heartbeat(System.nanoTime());
            track(id, indexOf(gpu.uuid()), smPercent, block);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the control block " + dir, e);
        }
        LOG.infof("allocated %d%% of %s as %s", smPercent, gpu.uuid(), id);
        return ContainerAllocateResponse.newBuilder()
                .putEnvs("NVIDIA_VISIBLE_DEVICES", gpu.uuid())
                .putEnvs("DILU_CONTROL_DIR", config.containerControlDir())
                .putEnvs("DILU_SM_REQUEST", Integer.toString(smPercent))
                .putEnvs("DILU_ALLOCATION", id)
                .addAllMounts(GpuSmDevicePlugin.controlMounts(dir.toString(), config.containerControlDir(),
                        config.hookHostPath(), config.hookContainerPath()))
                .build();
    }

    /** The allocations, by id: for metrics and the pod matcher. */
    public Map<String, Tenant> all() {
        return Map.copyOf(byId);
    }
}
