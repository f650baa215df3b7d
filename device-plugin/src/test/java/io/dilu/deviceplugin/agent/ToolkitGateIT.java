package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.NodeInventory;
import io.dilu.deviceplugin.gpu.ToolkitConfig;
import io.dilu.deviceplugin.kubelet.DevicePluginEndpoint;
import io.dilu.deviceplugin.kubelet.FakeKubeletAccess;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SocketTempDirs;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Taint;
import io.fabric8.kubernetes.api.model.TaintBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's side of issue 36's fail-open route, on a real kube-apiserver and over the kubelet's real sockets: a
 * toolkit that honours NVIDIA_VISIBLE_DEVICES taints the Node and keeps the device plugin away from the kubelet,
 * whatever admission did; setting it closed lifts the taint (and only it) and the plugin registers; opening it again
 * withdraws the plugin. The toolkit's file is a temporary one, the checks run when the test says.
 */
class ToolkitGateIT {

    static final String NODE = "gpu-node-toolkit";
    static final String OPEN_TOML = "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n";
    static final String CLOSED_TOML = """
            accept-nvidia-visible-devices-envvar-when-unprivileged = false
            accept-nvidia-visible-devices-as-volume-mounts = true
            """;

    @TempDir(factory = SocketTempDirs.class) // the kubelet's and the plugin's sockets are bound in it
    Path tmp;

    @Test
    void anOpenToolkitTaintsTheNodeAndKeepsThePluginFromTheKubeletUntilItIsClosed() throws Exception {
        Path toml = Files.writeString(tmp.resolve("config.toml"), OPEN_TOML);
        Path plugins = Files.createDirectories(tmp.resolve("device-plugins"));
        List<GpuDevice> gpus = NodeInventory.uniform(NODE, 1, "A100-40GB", 40_960, 108).gpus();
        try (RealApiServer api = RealApiServer.start(); FakeKubeletAccess kubelet = FakeKubeletAccess.start(plugins)) {
            KubernetesClient client = api.client();
            Taint other = new TaintBuilder().withKey("example.com/maintenance").withEffect("NoSchedule").build();
            client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE).endMetadata().withNewSpec()
                    .withTaints(other).endSpec().build()).create();
            // The API server may add its own (not-ready, until a kubelet reports): the gate leaves every other taint be.
            List<String> before = taints(client);
            assertThat(before).contains(other.getKey());
            List<String> withOurs = new java.util.ArrayList<>(before);
            withOurs.add(DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT);
            ToolkitGate gate = new ToolkitGate(() -> ToolkitConfig.judge(toml, true), new KubeNode(client, NODE,
                    InstantSource.system()), true);
            gate.judge();
            GpuSmDevicePlugin plugin = new GpuSmDevicePlugin(gpus, new GpuSmDevicePlugin.Allocator() {
                @Override
                public ContainerAllocateResponse allocate(List<GpuDevice> gpus, List<String> ids) {
                    throw new AssertionError("nothing is allocated here");
                }

                @Override
                public Optional<Map<String, Integer>> preferredShares(int size, Map<String, Integer> available) {
                    return Optional.empty();
                }
            });
            try (DevicePluginEndpoint endpoint = new DevicePluginEndpoint(plugins, "dilu-gpu-sm.sock", plugin, gate::mayServe)) {
                endpoint.start();
                // start() checks at once: with the route open there is no socket to register.
                assertThat(endpoint.serving()).isFalse();
                assertThat(plugins.resolve("dilu-gpu-sm.sock")).doesNotExist();

                gate.check();
                assertThat(taints(client)).containsExactlyInAnyOrderElementsOf(withOurs);
                assertThat(client.nodes().withName(NODE).get().getSpec().getTaints()).filteredOn(t -> t.getKey()
                        .equals(DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT)).singleElement().extracting(Taint::getEffect)
                        .isEqualTo("NoSchedule");
                assertThat(nodeEvents(client)).singleElement().satisfies(e -> {
                    assertThat(e.getType()).isEqualTo("Warning");
                    assertThat(e.getMessage()).contains("accept-nvidia-visible-devices-envvar-when-unprivileged is not false in "
                            + toml).contains("node tainted " + DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT + ":NoSchedule");
                });
                assertThat(kubelet.pendingRegistrations()).isZero();

                Files.writeString(toml, CLOSED_TOML);
                gate.check();
                assertThat(taints(client)).as("ours lifted, the others kept").containsExactlyInAnyOrderElementsOf(before);
                assertThat(kubelet.awaitRegistration().getResourceName()).isEqualTo(DiluNames.GPU_SM);
                assertThat(nodeEvents(client)).extracting(Event::getReason)
                        .containsExactlyInAnyOrder(ToolkitGate.OPENED, ToolkitGate.CLOSED);

                Files.writeString(toml, OPEN_TOML);
                gate.check();
                assertThat(taints(client)).containsExactlyInAnyOrderElementsOf(withOurs);
                // The endpoint's own check (every second) withdraws the plugin: its socket goes, the kubelet's stream ends.
                await().atMost(Duration.ofSeconds(20)).until(() -> !endpoint.serving());
                assertThat(plugins.resolve("dilu-gpu-sm.sock")).doesNotExist();
            }
        }
    }

    private static List<String> taints(KubernetesClient client) {
        List<Taint> taints = client.nodes().withName(NODE).get().getSpec().getTaints();
        return taints == null ? List.of() : taints.stream().map(Taint::getKey).toList();
    }

    private static List<Event> nodeEvents(KubernetesClient client) {
        return client.v1().events().inNamespace("default").list().getItems().stream()
                .filter(e -> "Node".equals(e.getInvolvedObject().getKind()) && NODE.equals(e.getInvolvedObject().getName()))
                .toList();
    }
}
