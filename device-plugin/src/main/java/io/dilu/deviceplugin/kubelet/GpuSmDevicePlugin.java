package io.dilu.deviceplugin.kubelet;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.kubelet.v1beta1.AllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.AllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerPreferredAllocationRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerPreferredAllocationResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.Device;
import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginGrpc;
import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginOptions;
import io.dilu.deviceplugin.kubelet.v1beta1.Empty;
import io.dilu.deviceplugin.kubelet.v1beta1.ListAndWatchResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.Mount;
import io.dilu.deviceplugin.kubelet.v1beta1.PreStartContainerRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.PreStartContainerResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.PreferredAllocationRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.PreferredAllocationResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * The kubelet-facing side of the node agent for {@code dilu.io/gpu-sm}: every GPU is advertised as {@link
 * DiluNames#GPU_SM_IDS_PER_GPU} device IDs ({@code <uuid>::sm<NN>}), a container taking one per percent of its SM
 * request, so the kubelet's integer accounting of extended resources counts SM percent. More than 100 per GPU because a
 * parked pod keeps its IDs while the scheduler extender gives its SMs to others; the extender's book, not this count,
 * bounds what is booked on a GPU. Allocate answers with the GPU, the quota and the mounts of the
 * container's control block; what it decides about the control block is delegated to {@link Allocator}.
 */
public final class GpuSmDevicePlugin extends DevicePluginGrpc.DevicePluginImplBase {

    private static final Logger LOG = Logger.getLogger(GpuSmDevicePlugin.class);
    static final String SEPARATOR = "::sm";

    /** Turns one container's share into what the container needs: environment and mounts. */
    @FunctionalInterface
    public interface Allocator {
        /** @param deviceIds the share's device IDs, all on {@code gpu}; their number is the SM percent */
        ContainerAllocateResponse allocate(List<GpuDevice> gpus, List<String> deviceIds);

        /**
         * Where the scheduler meant the container about to be allocated {@code size} percent to go, if known: IDs to
         * take per GPU UUID — one GPU, or several for a container split into pipeline stages.
         *
         * @param available free device IDs per GPU UUID
         */
        default Optional<Map<String, Integer>> preferredShares(int size, Map<String, Integer> available) {
            return Optional.empty();
        }
    }

    private final List<GpuDevice> gpus;
    private final Allocator allocator;
    private final Set<String> unhealthy = ConcurrentHashMap.newKeySet();
    private final Set<StreamObserver<ListAndWatchResponse>> watchers = ConcurrentHashMap.newKeySet();

    public GpuSmDevicePlugin(List<GpuDevice> gpus, Allocator allocator) {
        this.gpus = List.copyOf(gpus);
        this.allocator = allocator;
    }

    public static String deviceId(GpuDevice gpu, int percent) {
        return String.format("%s%s%02d", gpu.uuid(), SEPARATOR, percent);
    }

    public static String gpuOf(String deviceId) {
        int at = deviceId.lastIndexOf(SEPARATOR);
        if (at <= 0) {
            throw new IllegalArgumentException("device ID " + deviceId + " is not <gpu-uuid>" + SEPARATOR + "<NN>");
        }
        return deviceId.substring(0, at);
    }

    ListAndWatchResponse devices() {
        ListAndWatchResponse.Builder list = ListAndWatchResponse.newBuilder();
        for (GpuDevice gpu : gpus) {
            String health = unhealthy.contains(gpu.uuid()) ? "Unhealthy" : "Healthy";
            for (int p = 0; p < DiluNames.GPU_SM_IDS_PER_GPU; p++) {
                list.addDevices(Device.newBuilder().setID(deviceId(gpu, p)).setHealth(health));
            }
        }
        return list.build();
    }

    /** Marks a GPU (un)healthy and tells every watching kubelet at once. */
    public void setHealthy(String uuid, boolean healthy) {
        boolean changed = healthy ? unhealthy.remove(uuid) : unhealthy.add(uuid);
        if (changed) {
            LOG.infof("GPU %s is now %s", uuid, healthy ? "healthy" : "unhealthy");
            ListAndWatchResponse update = devices();
            for (StreamObserver<ListAndWatchResponse> w : watchers) {
                try {
                    w.onNext(update);
                } catch (RuntimeException e) {
                    watchers.remove(w); // the kubelet went away; it will reconnect after re-registering
                }
            }
        }
    }

    @Override
    public void getDevicePluginOptions(Empty request, StreamObserver<DevicePluginOptions> out) {
        out.onNext(DevicePluginOptions.newBuilder().setGetPreferredAllocationAvailable(true).build());
        out.onCompleted();
    }

    @Override
    public void listAndWatch(Empty request, StreamObserver<ListAndWatchResponse> out) {
        if (out instanceof ServerCallStreamObserver<ListAndWatchResponse> call) {
            call.setOnCancelHandler(() -> watchers.remove(out));
        }
        watchers.add(out);
        out.onNext(devices());
    }

    /**
     * Keeps a container's share where the scheduler put it when the {@link Allocator} knows: one GPU, or for a
     * container split into pipeline stages each stage's percent of its GPU. Otherwise one GPU, the one with the
     * most free IDs; always one that holds every ID the kubelet says must be included.
     */
    @Override
    public void getPreferredAllocation(PreferredAllocationRequest request, StreamObserver<PreferredAllocationResponse> out) {
        PreferredAllocationResponse.Builder response = PreferredAllocationResponse.newBuilder();
        for (ContainerPreferredAllocationRequest c : request.getContainerRequestsList()) {
            Map<String, List<String>> byGpu;
            try {
                byGpu = c.getAvailableDeviceIDsList().stream()
                        .collect(Collectors.groupingBy(GpuSmDevicePlugin::gpuOf, LinkedHashMap::new, Collectors.toList()));
            } catch (IllegalArgumentException e) {
                out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
                return;
            }
            int size = c.getAllocationSize();
            String required = c.getMustIncludeDeviceIDsCount() > 0 ? gpuOf(c.getMustIncludeDeviceIDs(0)) : null;
            Map<String, Integer> available = byGpu.entrySet().stream()
                    .filter(e -> required == null || e.getKey().equals(required))
                    .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().size()));
            Map<String, Integer> shares = allocator.preferredShares(size, available)
                    .or(() -> available.entrySet().stream().filter(e -> e.getValue() >= size)
                            .max(Comparator.comparing((Map.Entry<String, Integer> e) -> e.getValue())
                                    .thenComparing(Map.Entry::getKey, Comparator.reverseOrder()))
                            .map(e -> Map.of(e.getKey(), size)))
                    .orElse(Map.of());
            List<String> chosen = new ArrayList<>();
            if (!shares.isEmpty()) {
                // The IDs the kubelet insists on first, then free ones of each GPU up to its share.
                chosen.addAll(c.getMustIncludeDeviceIDsList());
                for (Map.Entry<String, Integer> share : new java.util.TreeMap<>(shares).entrySet()) {
                    long taken = chosen.stream().filter(id -> gpuOf(id).equals(share.getKey())).count();
                    for (String id : byGpu.getOrDefault(share.getKey(), List.of())) {
                        if (taken >= share.getValue() || chosen.size() >= size) {
                            break;
                        }
                        if (!chosen.contains(id)) {
                            chosen.add(id);
                            taken++;
                        }
                    }
                }
            }
            response.addContainerResponses(ContainerPreferredAllocationResponse.newBuilder().addAllDeviceIDs(chosen));
        }
        out.onNext(response.build());
        out.onCompleted();
    }

    @Override
    public void allocate(AllocateRequest request, StreamObserver<AllocateResponse> out) {
        Map<String, GpuDevice> known = gpus.stream().collect(Collectors.toMap(GpuDevice::uuid, Function.identity()));
        AllocateResponse.Builder response = AllocateResponse.newBuilder();
        for (ContainerAllocateRequest c : request.getContainerRequestsList()) {
            Map<String, Long> perGpu;
            try {
                perGpu = c.getDevicesIdsList().stream()
                        .collect(Collectors.groupingBy(GpuSmDevicePlugin::gpuOf, LinkedHashMap::new, Collectors.counting()));
            } catch (IllegalArgumentException e) {
                out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
                return;
            }
            // One GPU, or up to a control block's devices for a container split into pipeline stages.
            if (perGpu.isEmpty() || perGpu.size() > ControlBlock.MAX_DEVICES || !known.keySet().containsAll(perGpu.keySet())) {
                out.onError(Status.INVALID_ARGUMENT.withDescription("a dilu.io/gpu-sm share must lie on 1.."
                        + ControlBlock.MAX_DEVICES + " known GPUs, got " + new ArrayList<>(perGpu.keySet())).asRuntimeException());
                return;
            }
            if (c.getDevicesIdsList().stream().distinct().count() != c.getDevicesIdsCount()) {
                out.onError(Status.INVALID_ARGUMENT.withDescription("device IDs repeat in " + c.getDevicesIdsList())
                        .asRuntimeException());
                return;
            }
            try {
                response.addContainerResponses(allocator.allocate(perGpu.keySet().stream().map(known::get).toList(),
                        List.copyOf(c.getDevicesIdsList())));
            } catch (IllegalArgumentException e) {
                out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
                return;
            }
        }
        out.onNext(response.build());
        out.onCompleted();
    }

    @Override
    public void preStartContainer(PreStartContainerRequest request, StreamObserver<PreStartContainerResponse> out) {
        out.onNext(PreStartContainerResponse.getDefaultInstance());
        out.onCompleted();
    }

    /**
     * How Allocate names a container's GPUs to the NVIDIA container toolkit ({@code dilu.agent.device-list-strategy}),
     * as NVIDIA's own device plugin does ({@code --device-list-strategy}, internal/plugin/server.go).
     *
     * <p>The toolkit gives a container the GPUs it finds (nvidia-container-toolkit, internal/config/image/
     * cuda_image.go, {@code VisibleDevices}): first those named by mounts of {@code /dev/null} under
     * {@code /var/run/nvidia-container-devices/} when {@code accept-nvidia-visible-devices-as-volume-mounts} is true;
     * otherwise those of {@code NVIDIA_VISIBLE_DEVICES}, for an unprivileged container (no CAP_SYS_ADMIN) only when
     * {@code accept-nvidia-visible-devices-envvar-when-unprivileged} is true — its default. The variable can come from
     * anyone's image or pod spec; a mount with {@code /dev/null} as its source only from a hostPath volume (which the
     * webhook and Pod Security refuse to tenants) or from a device plugin's Allocate.
     */
    public enum DeviceListStrategy {
        /** {@code NVIDIA_VISIBLE_DEVICES=<uuids>}: works with the toolkit's defaults, which let any image's ENV in. */
        ENVVAR,
        /**
         * A {@code /dev/null} mount per GPU at {@code /var/run/nvidia-container-devices/<uuid>}, and
         * {@code NVIDIA_VISIBLE_DEVICES} set to that directory, as NVIDIA's plugin sets it: a toolkit that reads the
         * variable instead of the mounts finds no GPU of that name and refuses to start the container, so a node
         * not configured as docs/install.md says fails loudly instead of running open.
         */
        VOLUME_MOUNTS,
        /** Both: the mounts where the toolkit reads them, the variable where it does not (nodes being converted). */
        BOTH;

        public static final String MOUNT_ROOT = "/var/run/nvidia-container-devices";

        /** From {@code envvar}, {@code volume-mounts} or {@code both}. */
        public static DeviceListStrategy parse(String value) {
            return switch (value.strip().toLowerCase(java.util.Locale.ROOT)) {
                case "envvar" -> ENVVAR;
                case "volume-mounts" -> VOLUME_MOUNTS;
                case "both" -> BOTH;
                default -> throw new IllegalArgumentException("dilu.agent.device-list-strategy must be envvar, "
                        + "volume-mounts or both, got '" + value + "'");
            };
        }

        /** Names {@code uuids} to the toolkit in {@code response}. */
        public void apply(ContainerAllocateResponse.Builder response, List<String> uuids) {
            response.putEnvs("NVIDIA_VISIBLE_DEVICES", this == VOLUME_MOUNTS ? MOUNT_ROOT : String.join(",", uuids));
            if (this != ENVVAR) {
                for (String uuid : uuids) {
                    response.addMounts(Mount.newBuilder().setHostPath("/dev/null")
                            .setContainerPath(MOUNT_ROOT + "/" + uuid).setReadOnly(true));
                }
            }
        }
    }

    /**
     * What a container with a share gets mounted: its control block's two pages (the grant read-only: a tenant
     * must not raise its own share), the hook, and an /etc/ld.so.preload naming the hook, so that every
     * dynamically linked process of the container loads it whatever its environment says.
     */
    /**
     * The container's cycle page (read-write: its hook publishes its launch cycles there) and its GPU's neighbours
     * directory (read-only: the SLO neighbours' cycle pages, which its hook waits for where the agent asks it to).
     */
    public static List<Mount> cycleMounts(String hostDir, String hostNeighbours, String containerDir) {
        return List.of(
                Mount.newBuilder().setHostPath(hostDir + "/cycle").setContainerPath(containerDir + "/cycle").setReadOnly(false).build(),
                Mount.newBuilder().setHostPath(hostNeighbours).setContainerPath(containerDir + "/neighbours").setReadOnly(true).build());
    }

    public static List<Mount> controlMounts(String hostDir, String containerDir, String hostHook, String containerHook,
            String hostPreload) {
        return List.of(
                Mount.newBuilder().setHostPath(hostDir + "/grant").setContainerPath(containerDir + "/grant").setReadOnly(true).build(),
                Mount.newBuilder().setHostPath(hostDir + "/report").setContainerPath(containerDir + "/report").setReadOnly(false).build(),
                Mount.newBuilder().setHostPath(hostHook).setContainerPath(containerHook).setReadOnly(true).build(),
                Mount.newBuilder().setHostPath(hostPreload).setContainerPath("/etc/ld.so.preload").setReadOnly(true).build());
    }
}
