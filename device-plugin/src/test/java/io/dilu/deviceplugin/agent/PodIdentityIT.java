package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Priority;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.kubelet.FakePodResources;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.PodResourcesClient;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.dilu.testing.SocketTempDirs;

/**
 * "Which pod is this?" against a real kube-apiserver and the kubelet's PodResources API over a real socket:
 * shares are matched at Allocate from the scheduler's assignment, confirmed or corrected from what the
 * kubelet reports, annotations that disagree with the node are rewritten, and shares of pods that are gone are
 * released, but only after the grace period and never while the kubelet is not answering.
 */
class PodIdentityIT {

    static final String NODE = "gpu-node-1";
    static final String NS = "fns";
    static RealApiServer api;
    static KubernetesClient client;

    @TempDir(factory = SocketTempDirs.class) // Unix sockets are bound in it
    Path tmp;

    @BeforeAll
    static void startApiServer() {
        api = RealApiServer.start();
        client = api.client();
        // An administrator granted this namespace SLO priority (the infer pod asks for it).
        api.createNamespace(NS, Map.of(io.dilu.core.contract.QuotaRights.ALLOW_SLO_LABEL, "true"));
    }

    @AfterAll
    static void stopApiServer() {
        if (api != null) {
            api.close();
        }
    }

    static Pod pod(String name, Map<String, String> annotations, int... sm) {
        return podOn(NODE, name, annotations, sm);
    }

    static Pod podOn(String node, String name, Map<String, String> annotations, int... sm) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).withAnnotations(annotations)
                .endMetadata().withNewSpec().withNodeName(node).withAutomountServiceAccountToken(false).endSpec();
        for (int i = 0; i < sm.length; i++) {
            Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm[i])));
            b.editSpec().addNewContainer().withName("c" + i).withImage("registry.local/fn:1")
                    .withNewResources().withLimits(share).withRequests(share).endResources().endContainer().endSpec();
        }
        return client.pods().inNamespace(NS).resource(b.build()).create();
    }

    /** The agent's paths under this test's directory, with the emulated GPUs' state or without. */
    Allocations.Paths paths(boolean emulated) throws java.io.IOException {
        Allocations.Paths paths = new Allocations.Paths(tmp.resolve("containers"), "/var/run/dilu/control",
                "/opt/dilu/lib/libdilu-hook.so", "/opt/dilu/lib/libdilu-hook.so", tmp.resolve("ld.so.preload"),
                emulated ? Optional.of(tmp.resolve("emulated-gpus")) : Optional.empty());
        Files.createDirectories(paths.controlRoot());
        return paths;
    }

    static List<String> ids(GpuDevice gpu, int from, int count) {
        return IntStream.range(from, from + count).mapToObj(i -> GpuSmDevicePlugin.deviceId(gpu, i)).toList();
    }

    static String assignment(String pod) {
        return client.pods().inNamespace(NS).withName(pod).get().getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS);
    }

    static double counter(SimpleMeterRegistry metrics, String kind) {
        return metrics.get("dilu_assignment_mismatches_total").tag("kind", kind).counter().count();
    }

    @Test
    void sharesAreMatchedToTheirPodsCorrectedFromTheKubeletAndReleasedWhenThePodIsGone() throws Exception {
        List<GpuDevice> gpus = EmulatedInventory.parse(NODE, "2x A100-40GB, 108 SMs").gpus();
        GpuDevice gpu0 = gpus.get(0);
        GpuDevice gpu1 = gpus.get(1);
        Allocations.Paths paths = paths(true);
        TestingClock clock = new TestingClock(Instant.parse("2026-11-22T10:00:00Z"));
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        Path socket = tmp.resolve("pod-resources.sock");

        pod("infer", Map.of(DiluNames.ASSIGNED_GPUS, gpu1.uuid(), DiluNames.SM_LIMIT, "60", DiluNames.PRIORITY, "slo"), 30);
        pod("train", Map.of(DiluNames.ASSIGNED_GPUS, gpu0.uuid()), 40);
        pod("plain", Map.of(), 10);

        try (TokenManager tokens = new TokenManager(2, TokenParameters.DEFAULTS, 1, clock, 16);
                FakePodResources kubelet = new FakePodResources(socket);
                PodResourcesClient podResources = new PodResourcesClient(socket, Duration.ofSeconds(2))) {
            PodIdentity identity = new PodIdentity(client, NODE, podResources, clock, Duration.ofSeconds(30), metrics);
            Allocations allocations = new Allocations(paths, gpus, tokens, clock, identity);
            identity.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> identity.seen().size() == 3
                    && identity.seen().stream().allMatch(PodView::sloRight));

            // The kubelet asks where to take 30 percent from: the GPU the scheduler gave the pod being admitted.
            Map<String, Integer> free = Map.of(gpu0.uuid(), 100, gpu1.uuid(), 100);
            assertThat(allocations.preferredShares(30, free)).contains(Map.of(gpu1.uuid(), 30));
            var infer = allocations.allocate(gpu1, ids(gpu1, 0, 30));
            assertThat(infer.getEnvsMap()).containsEntry("DILU_SM_REQUEST", "30").containsEntry("DILU_SM_LIMIT", "60");
            // Emulated GPUs: the containers on one GPU share that GPU's emulator state, shown as the inventory says.
            assertThat(infer.getEnvsMap()).containsEntry("DILU_EMU_DIR", Allocations.EMULATOR_CONTAINER_DIR)
                    .containsEntry("DILU_EMU_SMS", Integer.toString(gpu1.smCount()))
                    .containsEntry("DILU_EMU_MEMORY_MIB", Long.toString(gpu1.memoryMib()));
            assertThat(infer.getMountsList()).anyMatch(m -> m.getContainerPath().equals(Allocations.EMULATOR_CONTAINER_DIR)
                    && m.getHostPath().equals(tmp.resolve("emulated-gpus/gpu" + gpu1.index()).toString()) && !m.getReadOnly());
            String inferId = infer.getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(allocations.all().get(inferId).owner()).contains(new ContainerRef(NS, "infer", "c0"));
            assertThat(allocations.tenants().get(inferId).sloSensitive()).isTrue();

            // The kubelet did not follow the preference for train: 40 percent of GPU 1 instead of GPU 0.
            String trainId = allocations.allocate(gpu1, ids(gpu1, 30, 40)).getEnvsOrThrow("DILU_ALLOCATION");
            String plainId = allocations.allocate(gpu0, ids(gpu0, 0, 10)).getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(allocations.all().get(trainId).owner()).contains(new ContainerRef(NS, "train", "c0"));

            kubelet.put(new ContainerRef(NS, "infer", "c0"), ids(gpu1, 0, 30));
            kubelet.put(new ContainerRef(NS, "train", "c0"), ids(gpu1, 30, 40));
            kubelet.put(new ContainerRef(NS, "plain", "c0"), ids(gpu0, 0, 10));
            identity.reconcile(allocations);
            assertThat(assignment("train")).as("the node is the truth").isEqualTo(gpu1.uuid());
            assertThat(assignment("plain")).as("a pod placed without Dilu's scheduler is annotated").isEqualTo(gpu0.uuid());
            assertThat(assignment("infer")).isEqualTo(gpu1.uuid());
            assertThat(counter(metrics, "annotation-different")).isEqualTo(1);
            assertThat(counter(metrics, "annotation-missing")).isEqualTo(1);
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                identity.reconcile(allocations);
                assertThat(counter(metrics, "annotation-different")).as("corrected once, not every round").isEqualTo(1);
            });

            // Two pods asking for the same share of the same GPU: the guess at Allocate may swap them; the kubelet's
            // listing puts each quota where it belongs.
            pod("a", Map.of(DiluNames.ASSIGNED_GPUS, gpu0.uuid(), DiluNames.SM_LIMIT, "25"), 20);
            pod("b", Map.of(DiluNames.ASSIGNED_GPUS, gpu0.uuid(), DiluNames.SM_LIMIT, "80", DiluNames.PRIORITY, "slo"), 20);
            await().atMost(Duration.ofSeconds(20)).until(() -> identity.seen().size() == 5);
            String first = allocations.allocate(gpu0, ids(gpu0, 10, 20)).getEnvsOrThrow("DILU_ALLOCATION");
            String second = allocations.allocate(gpu0, ids(gpu0, 30, 20)).getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(allocations.all().get(first).owner()).contains(new ContainerRef(NS, "a", "c0"));
            kubelet.put(new ContainerRef(NS, "b", "c0"), ids(gpu0, 10, 20));
            kubelet.put(new ContainerRef(NS, "a", "c0"), ids(gpu0, 30, 20));
            identity.reconcile(allocations);
            assertThat(allocations.all().get(first).owner()).contains(new ContainerRef(NS, "b", "c0"));
            assertThat(allocations.all().get(first).smLimit()).isEqualTo(80);
            assertThat(allocations.tenants().get(first).sloSensitive()).isTrue();
            assertThat(allocations.all().get(second).smLimit()).isEqualTo(25);
            assertThat(counter(metrics, "allocate-guess")).isEqualTo(2);

            // A restarted agent knows every owner and quota from the control root alone.
            try (TokenManager fresh = new TokenManager(2, TokenParameters.DEFAULTS, 1, clock, 16)) {
                Allocations restarted = new Allocations(paths, gpus, fresh, clock, List::of);
                assertThat(restarted.recover()).isEqualTo(5);
                assertThat(restarted.all()).isEqualTo(allocations.all());
                assertThat(fresh.gpu(0).size() + fresh.gpu(1).size()).isEqualTo(5);
            }

            // infer is deleted; its share goes only after the grace period, and not while the kubelet is away.
            client.pods().inNamespace(NS).withName("infer").delete();
            kubelet.remove(new ContainerRef(NS, "infer", "c0"));
            Path inferDir = paths.controlRoot().resolve(gpu1.uuid() + "_30_" + inferId);
            identity.reconcile(allocations);
            clock.advance(Duration.ofSeconds(29));
            identity.reconcile(allocations);
            assertThat(allocations.all()).containsKey(inferId);
            assertThat(inferDir).exists();
            kubelet.close();
            clock.advance(Duration.ofMinutes(5));
            identity.reconcile(allocations);
            assertThat(allocations.all()).as("nothing released while the kubelet does not answer").hasSize(5);
            assertThat(metrics.get("dilu_podresources_failures_total").counter().count()).isEqualTo(1);

            try (FakePodResources back = new FakePodResources(socket)) {
                Map<ContainerRef, List<String>> still = new HashMap<>();
                still.put(new ContainerRef(NS, "train", "c0"), ids(gpu1, 30, 40));
                still.put(new ContainerRef(NS, "plain", "c0"), ids(gpu0, 0, 10));
                still.put(new ContainerRef(NS, "b", "c0"), ids(gpu0, 10, 20));
                still.put(new ContainerRef(NS, "a", "c0"), ids(gpu0, 30, 20));
                still.forEach(back::put);
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                    identity.reconcile(allocations);
                    assertThat(allocations.all()).doesNotContainKey(inferId).hasSize(4);
                });
                assertThat(inferDir).doesNotExist();
                assertThat(tokens.gpu(1).size()).isEqualTo(1);
                assertThat(allocations.all().get(trainId).priority()).isEqualTo(Priority.BEST_EFFORT);
                assertThat(allocations.all().get(plainId).owner()).contains(new ContainerRef(NS, "plain", "c0"));
            }
            identity.close();
        }
    }

    @Test
    void aPodTheWatchHasNotDeliveredIsReadFromTheApiServerWhenTheKubeletAsks() throws Exception {
        String node = "gpu-node-lagging";
        List<GpuDevice> gpus = EmulatedInventory.parse(node, "2x A100-40GB, 108 SMs").gpus();
        GpuDevice gpu1 = gpus.get(1);
        Allocations.Paths paths = paths(false);
        TestingClock clock = new TestingClock(Instant.parse("2026-11-23T10:00:00Z"));
        podOn(node, "late", Map.of(DiluNames.ASSIGNED_GPUS, gpu1.uuid(), DiluNames.SM_LIMIT, "50"), 35);
        podOn("another-node", "elsewhere", Map.of(DiluNames.ASSIGNED_GPUS, gpus.get(0).uuid()), 20);

        try (TokenManager tokens = new TokenManager(2, TokenParameters.DEFAULTS, 1, clock, 16);
                PodResourcesClient podResources = new PodResourcesClient(tmp.resolve("no-kubelet.sock"), Duration.ofSeconds(2))) {
            // Never started: its watch has delivered nothing, as on a loaded node where it lags the scheduler's bind.
            PodIdentity identity = new PodIdentity(client, node, podResources, clock, Duration.ofSeconds(30),
                    new SimpleMeterRegistry());
            Allocations allocations = new Allocations(paths, gpus, tokens, clock, identity);
            assertThat(identity.seen()).isEmpty();

            Map<String, Integer> free = Map.of(gpus.get(0).uuid(), 100, gpu1.uuid(), 100);
            assertThat(allocations.preferredShares(35, free)).as("the scheduler's GPU, read from the API server").contains(Map.of(gpu1.uuid(), 35));
            var response = allocations.allocate(gpu1, ids(gpu1, 0, 35));
            String id = response.getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(allocations.all().get(id).owner()).contains(new ContainerRef(NS, "late", "c0"));
            assertThat(response.getEnvsMap()).containsEntry("DILU_SM_LIMIT", "50");
            // Pods of other nodes are not candidates, read or seen.
            assertThat(allocations.preferredShares(20, free)).isEmpty();
            String stranger = allocations.allocate(gpus.get(0), ids(gpus.get(0), 0, 20)).getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(allocations.all().get(stranger).owner()).isEmpty();
            identity.close();
        }
    }

    /**
     * A container split into pipeline stages: the kubelet is steered to each stage's percent of each GPU, the
     * share is one control block with a device per GPU (memory per stage), each GPU's token loop serves its
     * stage, the kubelet's listing confirms the annotation, and a restart finds it all again.
     */
    @Test
    void aSplitContainerGetsEveryGpuOfItsStagesWithAGrantOnEach() throws Exception {
        String node = "gpu-node-split";
        List<GpuDevice> gpus = EmulatedInventory.parse(node, "2x A100-40GB, 108 SMs").gpus();
        GpuDevice gpu0 = gpus.get(0);
        GpuDevice gpu1 = gpus.get(1);
        Allocations.Paths paths = paths(false);
        TestingClock clock = new TestingClock(Instant.parse("2026-11-23T10:00:00Z"));
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        Path socket = tmp.resolve("pod-resources-split.sock");
        String stages = gpu0.uuid() + ":12:15360," + gpu1.uuid() + ":8:9216";
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity("20"), DiluNames.GPU_MEMORY, new Quantity("24576"));
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName("llm").withNamespace(NS)
                .withAnnotations(Map.of(DiluNames.SPLIT, DiluNames.SPLIT_PIPELINE, DiluNames.ASSIGNED_GPUS, stages))
                .endMetadata().withNewSpec().withNodeName(node).withAutomountServiceAccountToken(false)
                .addNewContainer().withName("c0").withImage("registry.local/llm:1").withNewResources().withLimits(share)
                .withRequests(share).endResources().endContainer().endSpec().build()).create();

        try (TokenManager tokens = new TokenManager(2, TokenParameters.DEFAULTS, 1, clock, 16);
                FakePodResources kubelet = new FakePodResources(socket);
                PodResourcesClient podResources = new PodResourcesClient(socket, Duration.ofSeconds(2))) {
            PodIdentity identity = new PodIdentity(client, node, podResources, clock, Duration.ofSeconds(30), metrics);
            Allocations allocations = new Allocations(paths, gpus, tokens, clock, identity);
            identity.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> identity.seen().size() == 1);

            assertThat(allocations.preferredShares(20, Map.of(gpu0.uuid(), 100, gpu1.uuid(), 100)))
                    .contains(Map.of(gpu0.uuid(), 12, gpu1.uuid(), 8));
            List<String> ids = new java.util.ArrayList<>(ids(gpu1, 0, 8));
            ids.addAll(ids(gpu0, 50, 12));
            var response = allocations.allocate(List.of(gpu1, gpu0), ids);
            String id = response.getEnvsOrThrow("DILU_ALLOCATION");
            assertThat(response.getEnvsMap()).containsEntry("DILU_SM_REQUEST", "20");
            // Its GPUs in the node's order (the order CUDA numbers them in the container).
            assertThat(response.getMountsList()).extracting(m -> m.getContainerPath())
                    .filteredOn(p -> p.startsWith("/var/run/nvidia-container-devices/"))
                    .containsExactly("/var/run/nvidia-container-devices/" + gpu0.uuid(),
                            "/var/run/nvidia-container-devices/" + gpu1.uuid());
            assertThat(allocations.all().get(id).owner()).contains(new ContainerRef(NS, "llm", "c0"));
            // A share on two GPUs that no waiting split container asked for is refused, and nothing is allocated.
            List<String> spread = new java.util.ArrayList<>(ids(gpu0, 80, 10));
            spread.addAll(ids(gpu1, 80, 10));
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> allocations.allocate(List.of(gpu0, gpu1), spread))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("split into pipeline stages");
            assertThat(allocations.all()).hasSize(1);
            assertThat(tokens.gpu(0).size()).as("GPU 0's loop serves stage 0").isEqualTo(1);
            assertThat(tokens.gpu(1).size()).as("GPU 1's loop serves stage 1").isEqualTo(1);
            Path dir = paths.controlRoot().resolve(gpu0.uuid() + "_20_" + id);
            try (ControlBlock block = ControlBlock.open(dir)) {
                assertThat(block.memoryLimit(0)).isEqualTo(15_360L << 20);
                assertThat(block.memoryLimit(1)).isEqualTo(9_216L << 20);
            }
            assertThat(new ShareLayout(List.of(gpu0, gpu1)).devices(allocations.all().get(id))).extracting(
                    ShareLayout.Device::smRequest, ShareLayout.Device::smLimit).containsExactly(org.assertj.core.groups.Tuple.tuple(12, 25),
                    org.assertj.core.groups.Tuple.tuple(8, 15));

            kubelet.put(new ContainerRef(NS, "llm", "c0"), ids);
            identity.reconcile(allocations);
            assertThat(assignment("llm")).as("the node agrees with the stages").isEqualTo(stages);
            assertThat(counter(metrics, "annotation-different")).isZero();

            try (TokenManager fresh = new TokenManager(2, TokenParameters.DEFAULTS, 1, clock, 16)) {
                Allocations restarted = new Allocations(paths, gpus, fresh, clock, List::of);
                assertThat(restarted.recover()).isEqualTo(1);
                assertThat(restarted.all()).isEqualTo(allocations.all());
                assertThat(fresh.gpu(0).size() + fresh.gpu(1).size()).isEqualTo(2);
            }
            identity.close();
        }
    }

    /**
     * The pod watch's event, not the 2 s reconcile, tells the token loop that a pod is parked and that it is booked
     * again: the share's tenant is parked within the event's delay. How long that took is printed, not judged.
     */
    @Test
    void aParkedPodsShareLosesItsGuaranteeOnTheWatchsEventAndAWokenOneGetsItBack() throws Exception {
        String node = "gpu-node-parking";
        List<GpuDevice> gpus = EmulatedInventory.parse(node, "1x A100-40GB, 108 SMs").gpus();
        GpuDevice gpu = gpus.getFirst();
        TestingClock clock = new TestingClock(Instant.parse("2026-11-28T10:00:00Z"));
        Path socket = tmp.resolve("pod-resources.sock");
        podOn(node, "warm", Map.of(DiluNames.ASSIGNED_GPUS, gpu.uuid()), 30);
        try (TokenManager tokens = new TokenManager(1, TokenParameters.DEFAULTS, 1, clock, 16);
                FakePodResources kubelet = new FakePodResources(socket);
                PodResourcesClient podResources = new PodResourcesClient(socket, Duration.ofSeconds(2))) {
            PodIdentity identity = new PodIdentity(client, node, podResources, clock, Duration.ofSeconds(30),
                    new SimpleMeterRegistry());
            Allocations allocations = new Allocations(paths(false), gpus, tokens, clock, identity);
            identity.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> identity.seen().size() == 1);
            String id = allocations.allocate(gpu, ids(gpu, 0, 30)).getEnvsOrThrow("DILU_ALLOCATION");
            identity.watchParking(allocations::setParked);
            assertThat(allocations.tenants().get(id).parked()).isFalse();

            long before = System.nanoTime();
            client.pods().inNamespace(NS).withName("warm").edit(p -> new PodBuilder(p).editMetadata()
                    .addToAnnotations(DiluNames.PARKED, "2026-11-28T10:00:00Z").endMetadata().build());
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(2))
                    .until(() -> allocations.tenants().get(id).parked());
            System.out.printf("the token loop learnt of the parking %.0f ms after the write (real API server, this machine)%n",
                    (System.nanoTime() - before) / 1e6);
            assertThat(allocations.parked(id)).isTrue();

            client.pods().inNamespace(NS).withName("warm").edit(p -> new PodBuilder(p).editMetadata()
                    .removeFromAnnotations(DiluNames.PARKED).endMetadata().build());
            await().atMost(Duration.ofSeconds(10)).until(() -> !allocations.tenants().get(id).parked());
            identity.close();
        }
    }
}
