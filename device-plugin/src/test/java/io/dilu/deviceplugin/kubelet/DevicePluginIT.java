package io.dilu.deviceplugin.kubelet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.NodeInventory;
import io.dilu.deviceplugin.kubelet.v1beta1.AllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.AllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerPreferredAllocationRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginGrpc;
import io.dilu.deviceplugin.kubelet.v1beta1.Device;
import io.dilu.deviceplugin.kubelet.v1beta1.Empty;
import io.dilu.deviceplugin.kubelet.v1beta1.ListAndWatchResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.Mount;
import io.dilu.deviceplugin.kubelet.v1beta1.PreferredAllocationRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.RegisterRequest;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.dilu.testing.SocketTempDirs;

/** The device plugin against a kubelet stand-in over real Unix sockets: registration, devices, allocation. */
class DevicePluginIT {

    @TempDir(factory = SocketTempDirs.class) // Unix sockets are bound in it
    Path tmp;

    private Path dir;
    private GpuSmDevicePlugin plugin;
    private DevicePluginEndpoint endpoint;
    private FakeKubelet kubelet;
    /** The GPU the scheduler assigned to the container being admitted, as the agent's pod matcher would say. */
    private final AtomicReference<String> assigned = new AtomicReference<>();
    private final AtomicReference<Map<String, Integer>> stages = new AtomicReference<>();
    /** How Allocate names the GPUs to the NVIDIA toolkit: the agent's default unless a test says otherwise. */
    private final AtomicReference<GpuSmDevicePlugin.DeviceListStrategy> deviceList =
            new AtomicReference<>(GpuSmDevicePlugin.DeviceListStrategy.VOLUME_MOUNTS);
    private final List<GpuDevice> gpus = NodeInventory.uniform("node", 2, "Emulated A100", 40_960, 108).gpus();

    @BeforeEach
    void start() throws Exception {
        dir = Files.createDirectories(tmp.resolve("device-plugins"));
        kubelet = new FakeKubelet(dir);
        plugin = new GpuSmDevicePlugin(gpus, new GpuSmDevicePlugin.Allocator() {
            @Override
            public ContainerAllocateResponse allocate(List<GpuDevice> gpus, List<String> ids) {
                ContainerAllocateResponse.Builder response = ContainerAllocateResponse.newBuilder()
                        .putEnvs("DILU_SM_REQUEST", Integer.toString(ids.size()))
                        .addAllMounts(GpuSmDevicePlugin.controlMounts("/var/lib/dilu/containers/x", "/var/run/dilu/control",
                                "/opt/dilu/lib/libdilu-hook.so", "/opt/dilu/lib/libdilu-hook.so", "/var/lib/dilu/ld.so.preload"));
                deviceList.get().apply(response, gpus.stream().map(GpuDevice::uuid).toList());
                return response.build();
            }

            @Override
            public Optional<Map<String, Integer>> preferredShares(int size, Map<String, Integer> available) {
                if (stages.get() != null) {
                    return Optional.of(stages.get());
                }
                return Optional.ofNullable(assigned.get()).filter(g -> available.getOrDefault(g, 0) >= size)
                        .map(g -> Map.of(g, size));
            }
        });
        endpoint = new DevicePluginEndpoint(dir, "dilu-gpu-sm.sock", plugin);
        endpoint.start();
    }

    @AfterEach
    void stop() throws Exception {
        endpoint.close();
        kubelet.close();
    }

    @Test
    void registersAndAdvertisesOneHundredIdsPerGpu() throws Exception {
        RegisterRequest registration = kubelet.registrations.poll(10, TimeUnit.SECONDS);
        assertThat(registration).isNotNull();
        assertThat(registration.getVersion()).isEqualTo("v1beta1");
        assertThat(registration.getResourceName()).isEqualTo("dilu.io/gpu-sm");
        assertThat(registration.getEndpoint()).isEqualTo("dilu-gpu-sm.sock");
        assertThat(registration.getOptions().getGetPreferredAllocationAvailable()).isTrue();

        DevicePluginGrpc.DevicePluginBlockingStub stub = kubelet.connect(registration);
        ListAndWatchResponse first = kubelet.deviceLists.poll(10, TimeUnit.SECONDS);
        assertThat(first).isNotNull();
        // Ten GPUs' worth of IDs each: a parked pod keeps its IDs while its SMs are booked to others.
        assertThat(first.getDevicesList()).hasSize(2 * DiluNames.GPU_SM_IDS_PER_GPU).allMatch(d -> d.getHealth().equals("Healthy"));
        assertThat(first.getDevicesList()).extracting(Device::getID).doesNotHaveDuplicates()
                .contains(gpus.get(0).uuid() + "::sm00", gpus.get(1).uuid() + "::sm99", gpus.get(1).uuid() + "::sm999");
        assertThat(stub.getDevicePluginOptions(Empty.getDefaultInstance()).getGetPreferredAllocationAvailable()).isTrue();

        plugin.setHealthy(gpus.get(1).uuid(), false);
        ListAndWatchResponse update = kubelet.deviceLists.poll(10, TimeUnit.SECONDS);
        assertThat(update).isNotNull();
        assertThat(update.getDevicesList().stream().filter(d -> d.getHealth().equals("Unhealthy")).count())
                .isEqualTo(DiluNames.GPU_SM_IDS_PER_GPU);
        assertThat(update.getDevicesList().stream().filter(d -> d.getHealth().equals("Unhealthy")))
                .allMatch(d -> d.getID().startsWith(gpus.get(1).uuid()));
    }

    @Test
    void allocateHandsOutTheGpuTheQuotaAndTheControlBlock() throws Exception {
        DevicePluginGrpc.DevicePluginBlockingStub stub = kubelet.connect(kubelet.registrations.poll(10, TimeUnit.SECONDS));
        List<String> thirty = IntStream.range(10, 40).mapToObj(i -> GpuSmDevicePlugin.deviceId(gpus.get(1), i)).toList();
        AllocateResponse response = stub.allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(thirty)).build());
        ContainerAllocateResponse c = response.getContainerResponses(0);
        assertThat(c.getEnvsMap()).containsEntry("DILU_SM_REQUEST", "30");
        assertThat(c.getMountsList()).extracting(Mount::getContainerPath, Mount::getReadOnly).containsExactly(
                org.assertj.core.groups.Tuple.tuple("/var/run/dilu/control/grant", true),
                org.assertj.core.groups.Tuple.tuple("/var/run/dilu/control/report", false),
                org.assertj.core.groups.Tuple.tuple("/opt/dilu/lib/libdilu-hook.so", true),
                org.assertj.core.groups.Tuple.tuple("/etc/ld.so.preload", true),
                org.assertj.core.groups.Tuple.tuple("/var/run/nvidia-container-devices/" + gpus.get(1).uuid(), true));

        // A container split into pipeline stages gets IDs of several GPUs, and all of those GPUs.
        List<String> split = List.of(GpuSmDevicePlugin.deviceId(gpus.get(0), 1), GpuSmDevicePlugin.deviceId(gpus.get(1), 1));
        assertThat(stub.allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(split)).build())
                .getContainerResponses(0).getMountsList()).extracting(Mount::getContainerPath)
                .contains("/var/run/nvidia-container-devices/" + gpus.get(0).uuid(),
                        "/var/run/nvidia-container-devices/" + gpus.get(1).uuid());
        List<String> elsewhere = List.of(GpuSmDevicePlugin.deviceId(gpus.get(0), 2), "GPU-of-another-node::sm01");
        assertThatThrownBy(() -> stub.allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(elsewhere)).build()))
                .isInstanceOf(StatusRuntimeException.class).hasMessageContaining("must lie on 1..8 known GPUs");
        assertThatThrownBy(() -> stub.allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addDevicesIds("garbage")).build()))
                .isInstanceOf(StatusRuntimeException.class).hasMessageContaining("is not <gpu-uuid>::sm<NN>");

        // Preferred allocation keeps a share on one GPU.
        List<String> available = IntStream.range(0, 200)
                .mapToObj(i -> GpuSmDevicePlugin.deviceId(gpus.get(i % 2), i / 2)).toList();
        List<String> preferred = stub.getPreferredAllocation(PreferredAllocationRequest.newBuilder()
                .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder()
                        .addAllAvailableDeviceIDs(available.subList(0, 150)).setAllocationSize(40)).build())
                .getContainerResponses(0).getDeviceIDsList();
        assertThat(preferred).hasSize(40).allMatch(id -> id.startsWith(gpus.get(0).uuid()));

        // ... on the GPU the scheduler assigned when the agent knows it, and with the IDs the kubelet insists on.
        assigned.set(gpus.get(1).uuid());
        var steered = stub.getPreferredAllocation(PreferredAllocationRequest.newBuilder()
                .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder()
                        .addAllAvailableDeviceIDs(available.subList(0, 150)).setAllocationSize(40))
                .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder()
                        .addAllAvailableDeviceIDs(available.subList(0, 150)).setAllocationSize(20)
                        .addMustIncludeDeviceIDs(available.get(148))).build());
        assertThat(steered.getContainerResponses(0).getDeviceIDsList()).hasSize(40)
                .allMatch(id -> id.startsWith(gpus.get(1).uuid() + "::"));
        assertThat(steered.getContainerResponses(1).getDeviceIDsList()).hasSize(20).contains(available.get(148))
                .allMatch(id -> id.startsWith(gpus.get(0).uuid() + "::"));
        assertThatThrownBy(() -> stub.allocate(AllocateRequest.newBuilder().addContainerRequests(
                ContainerAllocateRequest.newBuilder().addDevicesIds(thirty.get(0)).addDevicesIds(thirty.get(0))).build()))
                .isInstanceOf(StatusRuntimeException.class).hasMessageContaining("device IDs repeat");

        // A split container's IDs come from each of its stages' GPUs, as many as each stage's percent.
        stages.set(Map.of(gpus.get(0).uuid(), 12, gpus.get(1).uuid(), 8));
        List<String> staged = stub.getPreferredAllocation(PreferredAllocationRequest.newBuilder()
                .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder()
                        .addAllAvailableDeviceIDs(available.subList(0, 150)).setAllocationSize(20)).build())
                .getContainerResponses(0).getDeviceIDsList();
        assertThat(staged).hasSize(20);
        assertThat(staged.stream().filter(id -> id.startsWith(gpus.get(0).uuid() + "::"))).hasSize(12);
        assertThat(staged.stream().filter(id -> id.startsWith(gpus.get(1).uuid() + "::"))).hasSize(8);
    }

    /**
     * The NVIDIA toolkit's two routes (docs/install.md, "GPU nodes"): {@code /dev/null} mounted under
     * /var/run/nvidia-container-devices, which only a device plugin (or a hostPath volume) can put in a container, and
     * NVIDIA_VISIBLE_DEVICES, which any image can set.
     */
    @Test
    void allocateNamesTheGpusToTheToolkitAsTheStrategySays() throws Exception {
        DevicePluginGrpc.DevicePluginBlockingStub stub = kubelet.connect(kubelet.registrations.poll(10, TimeUnit.SECONDS));
        List<String> split = List.of(GpuSmDevicePlugin.deviceId(gpus.get(0), 5), GpuSmDevicePlugin.deviceId(gpus.get(1), 5));
        java.util.function.Supplier<ContainerAllocateResponse> allocate = () -> stub.allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(split)).build())
                .getContainerResponses(0);
        String both = gpus.get(0).uuid() + "," + gpus.get(1).uuid();
        List<String> deviceMounts = gpus.stream().map(g -> "/var/run/nvidia-container-devices/" + g.uuid()).toList();

        // volume-mounts (the default): a read-only /dev/null per GPU, and a variable that names no GPU, so that a
        // toolkit still reading the variable refuses the container instead of guessing.
        ContainerAllocateResponse mounts = allocate.get();
        assertThat(mounts.getEnvsMap()).containsEntry("NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices");
        assertThat(mounts.getMountsList()).filteredOn(m -> m.getContainerPath().startsWith("/var/run/nvidia-container-devices/"))
                .allSatisfy(m -> assertThat(m.getHostPath()).isEqualTo("/dev/null"))
                .allSatisfy(m -> assertThat(m.getReadOnly()).isTrue())
                .extracting(Mount::getContainerPath).containsExactlyElementsOf(deviceMounts);

        deviceList.set(GpuSmDevicePlugin.DeviceListStrategy.ENVVAR);
        ContainerAllocateResponse envvar = allocate.get();
        assertThat(envvar.getEnvsMap()).containsEntry("NVIDIA_VISIBLE_DEVICES", both);
        assertThat(envvar.getMountsList()).extracting(Mount::getContainerPath).doesNotContainAnyElementsOf(deviceMounts);

        deviceList.set(GpuSmDevicePlugin.DeviceListStrategy.BOTH);
        ContainerAllocateResponse twice = allocate.get();
        assertThat(twice.getEnvsMap()).containsEntry("NVIDIA_VISIBLE_DEVICES", both);
        assertThat(twice.getMountsList()).extracting(Mount::getContainerPath).containsAll(deviceMounts);

        assertThat(GpuSmDevicePlugin.DeviceListStrategy.parse(" Volume-Mounts "))
                .isEqualTo(GpuSmDevicePlugin.DeviceListStrategy.VOLUME_MOUNTS);
        assertThatThrownBy(() -> GpuSmDevicePlugin.DeviceListStrategy.parse("cdi-cri"))
                .hasMessageContaining("dilu.agent.device-list-strategy must be envvar, volume-mounts or both");
    }

    @Test
    void registersAgainWhenTheKubeletRestarts() throws Exception {
        assertThat(kubelet.registrations.poll(10, TimeUnit.SECONDS)).isNotNull();
        kubelet.close();
        Files.deleteIfExists(dir.resolve(DevicePluginEndpoint.KUBELET_SOCKET));
        Files.deleteIfExists(dir.resolve("dilu-gpu-sm.sock")); // the kubelet clears the directory on restart
        kubelet = new FakeKubelet(dir);
        RegisterRequest again = kubelet.registrations.poll(20, TimeUnit.SECONDS);
        assertThat(again).as("re-registration after the kubelet socket was re-created").isNotNull();
        kubelet.connect(again);
        assertThat(kubelet.deviceLists.poll(10, TimeUnit.SECONDS)).isNotNull();
        // The agent counts a registration once the kubelet's Register call has returned to it, which may be after the
        // kubelet (this test) has moved on.
        await().atMost(10, TimeUnit.SECONDS)
                .untilAsserted(() -> assertThat(endpoint.registrations()).isGreaterThanOrEqualTo(2));
    }

    @Test
    void registersWithANewKubeletSocketEvenWhenItsOwnSocketWasLeftAlone() throws Exception {
        assertThat(kubelet.registrations.poll(10, TimeUnit.SECONDS)).isNotNull();
        int before = endpoint.registrations();
        kubelet.close();
        // A kubelet socket that answers nothing for a while (a kubelet still starting): attempts fail until the
        // real one replaces it.
        Files.deleteIfExists(dir.resolve(DevicePluginEndpoint.KUBELET_SOCKET));
        try (var notListening = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            notListening.bind(java.net.UnixDomainSocketAddress.of(dir.resolve(DevicePluginEndpoint.KUBELET_SOCKET)), 1);
            Thread.sleep(2_500);
            assertThat(kubelet.registrations).isEmpty();
        }
        kubelet = new FakeKubelet(dir);
        RegisterRequest again = kubelet.registrations.poll(20, TimeUnit.SECONDS);
        assertThat(again).as("registration with the kubelet socket that replaced the first").isNotNull();
        assertThat(kubelet.connect(again).getDevicePluginOptions(io.dilu.deviceplugin.kubelet.v1beta1.Empty.getDefaultInstance())
                .getGetPreferredAllocationAvailable()).isTrue();
        await().atMost(10, TimeUnit.SECONDS).untilAsserted(() -> assertThat(endpoint.registrations()).isGreaterThan(before));
    }
}
