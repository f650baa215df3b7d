package io.dilu.deviceplugin.agent;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.Priority;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.kubelet.FakeKubeletAccess;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.v1beta1.AllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.ContainerAllocateResponse;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.testing.DocumentedMetrics;
import io.dilu.testing.SocketTempDirs;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The whole agent as the application starts it: GPUs, the kubelet's plugin socket, tokens, metrics. */
@QuarkusTest
@TestProfile(NodeAgentTest.Enabled.class)
class NodeAgentTest {

    /** The agent on, over temporary directories and two emulated GPUs. */
    public static class Enabled implements QuarkusTestProfile {
        static final Path ROOT;

        static {
            try {
                ROOT = SocketTempDirs.create(); // the kubelet's and the plugin's sockets are bound in it
                Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(ROOT)));
                Files.createDirectories(ROOT.resolve("device-plugins"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private static void deleteTree(Path root) {
            try (var paths = Files.walk(root)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // already gone
            }
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(
                    "dilu.agent.enabled", "true",
                    "dilu.agent.device-plugins-dir", ROOT.resolve("device-plugins").toString(),
                    "dilu.agent.control-root", ROOT.resolve("containers").toString(),
                    // Nothing of the test on the host's /var/lib/dilu.
                    "dilu.agent.preload-host-path", ROOT.resolve("ld.so.preload").toString(),
                    "dilu.agent.emulator-host-dir", ROOT.resolve("emulated-gpus").toString(),
                    "dilu.agent.emulated-gpus", "2x A100-40GB, 108 SMs",
                    "dilu.agent.publish-inventory", "false",
                    "dilu.agent.match-pods", "false");
        }
    }

    @Inject
    NodeAgent agent;

    @Inject
    NodeAgentConfig config;

    @Test
    void servesTheKubeletHandsOutSharesAndRefillsTheirTokens() throws Exception {
        assertThat(agent.gpus()).hasSize(2);
        given().get("/q/health/ready").then().statusCode(503); // no kubelet to register with yet
        given().get("/q/health/live").then().statusCode(200);
        try (FakeKubeletAccess kubelet = FakeKubeletAccess.start(Enabled.ROOT.resolve("device-plugins"))) {
            var stub = kubelet.connectAfterRegistration();
            // The kubelet has the registration; the agent counts it once the call has returned.
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5))
                    .untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200));
            List<String> thirty = IntStream.range(0, 30)
                    .mapToObj(i -> GpuSmDevicePlugin.deviceId(agent.gpus().get(1), i)).toList();
            ContainerAllocateResponse c = stub.allocate(AllocateRequest.newBuilder()
                    .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(thirty)).build())
                    .getContainerResponses(0);
            String id = c.getEnvsOrThrow("DILU_ALLOCATION");
            // The GPU reaches the NVIDIA toolkit as a /dev/null mount, the route no tenant image can take (the default).
            assertThat(c.getEnvsMap()).containsEntry("NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices");
            assertThat(c.getMountsList()).anySatisfy(m -> {
                assertThat(m.getContainerPath()).isEqualTo("/var/run/nvidia-container-devices/GPU-emu-local-1");
                assertThat(m.getHostPath()).isEqualTo("/dev/null");
            });
            Path dir = config.controlRoot().resolve("GPU-emu-local-1_30_" + id);
            assertThat(dir.resolve("grant")).exists();
            assertThat(c.getMounts(0).getHostPath()).isEqualTo(dir.resolve("grant").toString());

            // Alone on its GPU, the container gets tokens every period up to its limit (60% of 5,400).
            ControlBlock block = ControlBlock.open(dir);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (block.tokensGranted(0) == 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(block.tokensGranted(0)).isEqualTo(3_240);

            // The kubelet's PodResources would name the container (matching is off here): say it as the reconciler would.
            agent.allocations().apply(List.of(new Reconciler.Bind(id, new ContainerRef("fns", "infer-0", "server"),
                    new Allocation.ShareQuota(60, Priority.BEST_EFFORT, Double.NaN, 1024), false)));

            // The per-container rows are exported by the agent's refresh, every second, one series after another,
            // while a scrape may be under way: wait until a scrape shows them all (a loaded machine stretches that
            // second). A wrong value still fails, with the assertion's message, when the wait runs out.
            String row = "namespace=\"fns\",pod=\"infer-0\"";
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30))
                    .pollInterval(java.time.Duration.ofMillis(200)).untilAsserted(() -> {
                        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
                        assertThat(metrics).contains("dilu_allocations 1.0")
                                .containsPattern("dilu_container_tokens_granted_total\\{container=\"server\",gpu=\"GPU-emu-local-1\","
                                        + "namespace=\"fns\",pod=\"infer-0\"} 3240\\.0")
                                .containsPattern("dilu_gpu_utilization_ratio\\{gpu=\"GPU-emu-local-1\"[^}]*source=\"emulated\"[^}]*} 0\\.0")
                                .containsPattern("dilu_container_controller_state\\{[^}]*pod=\"infer-0\",state=\"none\"} 1\\.0")
                                .containsPattern("dilu_container_controller_state\\{[^}]*pod=\"infer-0\",state=\"emergency\"} 0\\.0")
                                .containsPattern("dilu_gpu_sm_request_ratio\\{gpu=\"GPU-emu-local-1\"[^}]*} 0\\.3")
                                .contains(row)
                                .doesNotContain("allocation=\"");
                        // docs/node-agent.md lists exactly what the agent exports, as exported.
                        assertThat(DocumentedMetrics.differences(DocumentedMetrics.of(DocumentedMetrics.doc("node-agent.md")),
                                metrics, "dilu_")).isEmpty();
                    });

            // Every container gets its cycle page and its GPU's neighbours directory, where a booked container's page
            // is linked under its class: its neighbours' hooks order cycles by it.
            Path neighbours = config.controlRoot().resolve("neighbours/GPU-emu-local-1");
            assertThat(c.getMountsList()).anySatisfy(m -> {
                assertThat(m.getContainerPath()).isEqualTo("/var/run/dilu/control/cycle");
                assertThat(m.getHostPath()).isEqualTo(dir.resolve("cycle").toString());
                assertThat(m.getReadOnly()).isFalse();
            }).anySatisfy(m -> {
                assertThat(m.getContainerPath()).isEqualTo("/var/run/dilu/control/neighbours");
                assertThat(m.getHostPath()).isEqualTo(neighbours.toString());
                assertThat(m.getReadOnly()).isTrue();
            });
            Path asSlo = neighbours.resolve("slo-" + id);
            Path asBestEffort = neighbours.resolve("be-" + id);
            var server = new ContainerRef("fns", "infer-0", "server");
            agent.allocations().apply(List.of(new Reconciler.Bind(id, server,
                    new Allocation.ShareQuota(60, Priority.SLO, Double.NaN, 1024), false)));
            assertThat(asSlo).exists();
            assertThat(Files.isSameFile(asSlo, dir.resolve("cycle"))).isTrue();
            assertThat(asBestEffort).doesNotExist();
            agent.allocations().apply(List.of(new Reconciler.Bind(id, server,
                    new Allocation.ShareQuota(60, Priority.BEST_EFFORT, Double.NaN, 1024), false)));
            assertThat(asSlo).doesNotExist();
            assertThat(Files.isSameFile(asBestEffort, dir.resolve("cycle"))).isTrue();

            // A restarted agent finds the allocation again from the control root alone.
            try (TokenManager fresh = new TokenManager(2, TokenParameters.DEFAULTS, 1, InstantSource.system(), 16)) {
                Allocations recovered = new Allocations(Allocations.Paths.of(config), agent.gpus(), fresh, InstantSource.system(), List::of);
                assertThat(recovered.recover()).isEqualTo(1);
                assertThat(recovered.all()).containsKey(id);
                assertThat(recovered.all().get(id).smRequest()).isEqualTo(30);
                assertThat(recovered.all().get(id).deviceIds()).containsExactlyInAnyOrderElementsOf(thirty);
                assertThat(recovered.tenants().get(id).request()).isEqualTo(0.30);
            }
        }
    }
}
