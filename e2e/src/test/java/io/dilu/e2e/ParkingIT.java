package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.ParkingPatch;
import io.dilu.kube.PodShares;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parking with real placement: a real kube-apiserver, a real kube-scheduler configured from the shipped manifests and
 * the extender as its own process; the test writes what the autoscaler writes (the same {@link ParkingPatch}es). A
 * parked pod's SMs go to a new pod on its GPU — on a one-GPU node, which kube-scheduler admits only because the node
 * agent advertises more {@code dilu.io/gpu-sm} IDs per GPU than the 100 percent the extender books — its wake then finds
 * no room and is refused, and its replacement is placed on another node's GPU. A wake with room is answered with the
 * serving condition. How long each answer took is printed (this machine, real processes), not judged.
 */
class ParkingIT {

    static final String NS = "parking";
    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS);
    static RealApiServer api;
    static KubernetesClient client;

    @TempDir
    static Path tmp;
    static final Path LOGS = TestApiServer.LOGS;

    @BeforeAll
    static void start() throws Exception {
        api = API.api();
        client = API.client();
    }

    static void node(String name) {
        LocalControlPlane.createGpuNode(client, name, List.of(new GpuDevice("GPU-" + name, 0, "A100-40GB", 40_960, 108)));
    }

    /** A pod of Dilu's class as the webhook leaves it: Dilu's scheduler, a readiness gate on dilu.io/serving. */
    static void gpuPod(String name, String function, int sm, long memoryMib) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .withAnnotations(Map.of(DiluNames.FUNCTION, function, KnativeNames.CLASS,
                        DiluNames.AUTOSCALER_CLASS)).endMetadata()
                .withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME).withAutomountServiceAccountToken(false)
                .addNewReadinessGate(DiluNames.SERVING_CONDITION)
                .addNewContainer().withName("c0").withImage("registry.local/" + function + ":1")
                .withNewResources().withRequests(share).withLimits(share).endResources().endContainer().endSpec()
                .build()).create();
    }

    static Pod pod(String name) {
        return client.pods().inNamespace(NS).withName(name).get();
    }

    static String gpuOf(String name) {
        return pod(name).getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS);
    }

    static void awaitBound(String name) {
        await().atMost(Duration.ofSeconds(Long.getLong("dilu.it.bind-timeout-s", 180))).pollInterval(Duration.ofMillis(200))
                .until(() -> pod(name).getSpec().getNodeName() != null);
    }

    /** Parked as the autoscaler parks: the annotation, then the condition False. */
    static void park(String name) {
        client.pods().inNamespace(NS).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                ParkingPatch.park(pod(name).getMetadata().getUid(), Instant.now()));
        client.pods().inNamespace(NS).withName(name).subresource("status").patch(PatchContext.of(PatchType.JSON),
                ParkingPatch.servingCondition(pod(name).getMetadata().getUid(), pod(name).getStatus().getConditions(), false, "Parked", "parked", Instant.now()));
    }

    /** Woken as the autoscaler wakes: returns System.nanoTime() of the write. */
    static long wake(String name) {
        long at = System.nanoTime();
        client.pods().inNamespace(NS).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                ParkingPatch.wake(pod(name).getMetadata().getUid(), Instant.now()));
        return at;
    }

    @Test
    void aParkedPodsSmsGoToANewPodAndItsWakeThenFailsOverToAnotherGpu() throws Exception {
        node("park-n1");
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));
        int port = LocalControlPlane.freePort();
        ChildProcess extender = LocalControlPlane.startExtender(kubeconfig, port, LOGS.resolve("extender-parking.log"));
        ChildProcess scheduler = LocalControlPlane.startScheduler(client, kubeconfig, port, tmp,
                LOGS.resolve("kube-scheduler-parking.log"));
        try {
            // A pod that serves beside it the whole time: a GPU that only parked pods hold is handed back at once.
            gpuPod("keeper", "fk", 20, 1_024);
            awaitBound("keeper");
            gpuPod("a", "fa", 60, 10_240);
            awaitBound("a");
            assertThat(gpuOf("a")).as("best fit: beside the keeper").isEqualTo(gpuOf("keeper"));
            assertThat(PodShares.serving(pod("a"))).as("its SM request booked at bind").isTrue();

            park("a");
            await().atMost(Duration.ofSeconds(10)).until(() -> !PodShares.serving(pod("a")));
            long asked = wake("a");
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5)).until(() -> {
                Pod p = pod("a");
                return PodShares.serving(p) && !p.getMetadata().getAnnotations().containsKey(DiluNames.WAKE);
            });
            System.out.printf("wake with room: answered %.0f ms after the autoscaler's write (serving condition True, "
                    + "the wake removed; real API server and extender, this machine)%n", (System.nanoTime() - asked) / 1e6);

            park("a");
            // The extender gives a's SMs back once its watch shows the pod parked: b, filtered before that, would wait
            // for kube-scheduler's retry of unschedulable pods (up to a minute in 1.20).
            Thread.sleep(1_000);
            gpuPod("b", "fb", 60, 10_240);
            awaitBound("b");
            assertThat(gpuOf("b")).as("the parked pod's SMs went to b, on its GPU").isEqualTo(gpuOf("a"))
                    .isEqualTo("GPU-park-n1");

            node("park-n2");
            long failed = wake("a");
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5))
                    .until(() -> pod("a").getMetadata().getAnnotations().containsKey(DiluNames.WAKE_FAILED));
            System.out.printf("wake without room: refused %.0f ms after the autoscaler's write%n",
                    (System.nanoTime() - failed) / 1e6);
            assertThat(pod("a").getMetadata().getAnnotations()).doesNotContainKey(DiluNames.WAKE)
                    .hasEntrySatisfying(DiluNames.WAKE_FAILED, why -> assertThat(why).startsWith(
                            "no room to serve again: GPU GPU-park-n1 would hold SM request 140% (Ω = 100%)"));
            assertThat(PodShares.serving(pod("a"))).as("still out of the path").isFalse();

            // The autoscaler deletes it; its ReplicaSet's replacement is a cold start on a GPU with room.
            client.pods().inNamespace(NS).withName("a").delete();
            gpuPod("a-again", "fa", 60, 10_240);
            awaitBound("a-again");
            assertThat(gpuOf("a-again")).isEqualTo("GPU-park-n2");
            assertThat(pod("a-again").getSpec().getNodeName()).isEqualTo("park-n2");
        } finally {
            scheduler.close();
            extender.close();
        }
    }
}
