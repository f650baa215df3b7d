package io.dilu.extender.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.ExtenderResource;
import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderBindingArgs;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.ParkingPatch;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The extender's events on a real kube-apiserver: a bound pod is told its node and GPU, a pod no node can take is
 * told why — once a minute however often the scheduler retries it, with the retries counted — and a failed bind
 * is told too ({@link ExtenderOnApiServer}: the extender's parts wired by hand over the test's clock, its events written
 * on the calling thread).
 */
class ExtenderEventsIT {

    static final String NS = "fns";
    static final String NODE = "n0";
    static ExtenderOnApiServer cluster;
    static KubernetesClient client;
    static PlacementBook book;
    static SimpleMeterRegistry parkingMetrics;

    @BeforeAll
    static void start() {
        cluster = new ExtenderOnApiServer(List.of(NS),
                Map.of(NODE, List.of(new GpuDevice("GPU-n0-0", 0, "A100-40GB", 40_960, 108))));
        client = cluster.client;
        book = cluster.book;
        parkingMetrics = cluster.parkingMetrics;
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    static Pod gpuPod(String name, int sm, long memoryMib) {
        return gpuPod(name, sm, memoryMib, false);
    }

    /** @param servingGate with a readiness gate on dilu.io/serving, as the webhook gives Dilu-scaled pods */
    static Pod gpuPod(String name, int sm, long memoryMib, boolean servingGate) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        PodBuilder pod = new PodBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME).withAutomountServiceAccountToken(false)
                .addNewContainer().withName("server").withImage("registry.local/fn:1").withNewResources()
                .withRequests(share).withLimits(share).endResources().endContainer().endSpec();
        if (servingGate) {
            pod.editSpec().addNewReadinessGate(DiluNames.SERVING_CONDITION).endSpec();
        }
        return client.pods().inNamespace(NS).resource(pod.build()).create();
    }

    static List<Event> events(String pod, String reason) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> pod.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason()))
                .sorted(Comparator.comparing(Event::getLastTimestamp)).toList();
    }

    static ExtenderBindingArgs bindArgs(Pod pod) {
        return new ExtenderBindingArgs(pod.getMetadata().getName(), NS, pod.getMetadata().getUid(), NODE);
    }

    /**
     * Parking through the API server, on a GPU of its own: the extender sets the serving condition at bind, gives a
     * parked pod's SMs to a new pod, answers a wake (condition True, the wake removed) and a wake without room
     * ({@code dilu.io/wake-failed} naming the GPU and the bounds), and deletes a parked pod whose memory a placement
     * needs, with an Event. How long a wake's answer took is printed, not judged.
     */
    @Test
    void aParkedPodsSmsGoToANewPodItsWakeIsAnsweredAndItsMemoryIsEvictedForAPlacement() throws Exception {
        cluster.addNode("n1", List.of(new GpuDevice("GPU-n1-0", 0, "A100-40GB", 40_960, 108)));
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        TestingClock clock = new TestingClock(Instant.parse("2026-11-28T10:00:00Z"));
        ExtenderResource extender = cluster.extender(clock, metrics, cluster.events(clock, metrics));
        List<String> n1 = List.of("n1");

        // A pod that serves on the GPU throughout: a GPU that parked pods alone hold is handed back at once (below).
        Pod keeper = gpuPod("keeper", 10, 1_024);
        assertThat(extender.filter(new ExtenderArgs(keeper, null, n1)).nodeNames()).containsExactly("n1");
        assertThat(extender.bind(new ExtenderBindingArgs("keeper", NS, keeper.getMetadata().getUid(), "n1")).error()).isNull();
        Pod a = gpuPod("park-a", 60, 10_240, true);
        assertThat(extender.filter(new ExtenderArgs(a, null, n1)).nodeNames()).containsExactly("n1");
        assertThat(extender.bind(new ExtenderBindingArgs("park-a", NS, a.getMetadata().getUid(), "n1")).error()).isNull();
        assertThat(io.dilu.kube.PodShares.serving(pod("park-a"))).as("set at bind: its SM request is booked").isTrue();

        // Parked as the autoscaler parks: the annotation, and the condition False.
        patch("park-a", ParkingPatch.park(a.getMetadata().getUid(), clock.instant()));
        client.pods().inNamespace(NS).withName("park-a").subresource("status").patch(PatchContext.of(PatchType.JSON),
                ParkingPatch.servingCondition(a.getMetadata().getUid(), pod("park-a").getStatus().getConditions(), false, "Parked", "parked",
                        clock.instant()));
        await().atMost(Duration.ofSeconds(10)).until(() -> requestOn("GPU-n1-0") == 100);
        long before = System.nanoTime();
        patch("park-a", ParkingPatch.wake(a.getMetadata().getUid(), clock.instant()));
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5)).until(() -> {
            Pod p = pod("park-a");
            return !p.getMetadata().getAnnotations().containsKey(DiluNames.WAKE) && io.dilu.kube.PodShares.serving(p);
        });
        assertThat(requestOn("GPU-n1-0")).isEqualTo(700);
        System.out.printf("a wake answered in %.0f ms, from the autoscaler's patch to the extender's answer on the API "
                + "server (real API server, this machine)%n", (System.nanoTime() - before) / 1e6);
        assertThat(parkingCount("dilu_extender_wakes_total", "woken")).isEqualTo(1);

        patch("park-a", ParkingPatch.park(a.getMetadata().getUid(), clock.instant()));
        await().atMost(Duration.ofSeconds(10)).until(() -> requestOn("GPU-n1-0") == 100);
        Pod b = gpuPod("park-b", 60, 10_240, true);
        assertThat(extender.filter(new ExtenderArgs(b, null, n1)).nodeNames()).as("the parked pod's SMs are free")
                .containsExactly("n1");
        assertThat(extender.bind(new ExtenderBindingArgs("park-b", NS, b.getMetadata().getUid(), "n1")).error()).isNull();

        patch("park-a", ParkingPatch.wake(a.getMetadata().getUid(), clock.instant()));
        await().atMost(Duration.ofSeconds(10)).until(() -> pod("park-a").getMetadata().getAnnotations()
                .containsKey(DiluNames.WAKE_FAILED));
        assertThat(pod("park-a").getMetadata().getAnnotations()).doesNotContainKey(DiluNames.WAKE)
                .hasEntrySatisfying(DiluNames.WAKE_FAILED, why -> assertThat(why).startsWith(
                        "no room to serve again: GPU GPU-n1-0 would hold SM request 130% (Ω = 100%)"));
        assertThat(parkingCount("dilu_extender_wakes_total", "failed")).isEqualTo(1);

        // 25,000 MiB: 19,456 are free, the parked pod's 10,240 make room.
        Pod c = gpuPod("park-c", 10, 25_000);
        assertThat(extender.filter(new ExtenderArgs(c, null, n1)).nodeNames()).containsExactly("n1");
        await().atMost(Duration.ofSeconds(10)).until(() -> client.pods().inNamespace(NS).withName("park-a").get() == null
                || client.pods().inNamespace(NS).withName("park-a").get().getMetadata().getDeletionTimestamp() != null);
        assertThat(events("park-a", ExtenderEvents.PARKED_EVICTED)).singleElement().satisfies(e -> assertThat(e.getMessage())
                .startsWith("parked since 2026-11-28T10:00:00Z; deleted for pod fns/park-c, which needed its 10240 MiB "
                        + "on GPU GPU-n1-0"));
        assertThat(evictions("placement")).isEqualTo(1);
        assertThat(extender.bind(new ExtenderBindingArgs("park-c", NS, c.getMetadata().getUid(), "n1")).error()).isNull();

        // b parked, the pods that serve beside it gone, out of the path: nothing but a parked pod holds the GPU, which
        // goes back.
        patch("park-b", ParkingPatch.park(b.getMetadata().getUid(), clock.instant()));
        await().atMost(Duration.ofSeconds(10)).until(() -> requestOn("GPU-n1-0") == 200);
        assertThat(pod("park-b").getMetadata().getDeletionTimestamp()).as("c and the keeper serve beside it").isNull();
        // Kept in the request path, as the autoscaler keeps the last instance of a revision that may not reach zero.
        servingCondition("park-b", DiluNames.SERVING_KEPT_REASON, clock.instant());
        // Gone as the kubelet removes a pod whose containers ended (no kubelet runs here: a pod deleted with its
        // grace period would stay booked, its containers running for all the book knows).
        client.pods().inNamespace(NS).withName("park-c").withGracePeriod(0).delete();
        client.pods().inNamespace(NS).withName("keeper").withGracePeriod(0).delete();
        await().atMost(Duration.ofSeconds(10)).until(() -> requestOn("GPU-n1-0") == 0);
        assertThat(pod("park-b").getMetadata().getDeletionTimestamp()).as("kept: let go, its ReplicaSet would start another")
                .isNull();
        assertThat(evictions("gpu-handed-back")).isZero();
        // Still in the path, but of a revision that may reach zero: its next request starts one where there is room.
        servingCondition("park-b", "LastInstance", clock.instant());
        await().atMost(Duration.ofSeconds(10)).until(() -> pod("park-b") == null
                || pod("park-b").getMetadata().getDeletionTimestamp() != null);
        assertThat(events("park-b", ExtenderEvents.PARKED_EVICTED)).singleElement().satisfies(e -> assertThat(e.getMessage())
                .isEqualTo("parked since 2026-11-28T10:00:00Z; deleted: nothing but parked pods held GPU GPU-n1-0, which"
                        + " goes back to the pool rather than stay in use for their 10240 MiB"));
        assertThat(evictions("gpu-handed-back")).isEqualTo(1);
        assertThat(book.activeUsage().stream().filter(u -> u.uuid().equals("GPU-n1-0")).mapToLong(u -> u.memoryMib()).sum())
                .as("the GPU free").isZero();
    }

    /** Sets a pod's {@code dilu.io/serving} condition True with {@code reason} at {@code at}, as the autoscaler writes it. */
    private static void servingCondition(String name, String reason, Instant at) {
        client.pods().inNamespace(NS).withName(name).subresource("status").patch(PatchContext.of(PatchType.JSON),
                ParkingPatch.servingCondition(pod(name).getMetadata().getUid(), pod(name).getStatus().getConditions(), true, reason, "parked, in the path", at));
    }

    private static double evictions(String reason) {
        return parkingMetrics.get("dilu_extender_parked_evictions_total").tag("reason", reason).counter().count();
    }

    private static double parkingCount(String name, String result) {
        return parkingMetrics.get(name).tag("result", result).counter().count();
    }

    private static Pod pod(String name) {
        return client.pods().inNamespace(NS).withName(name).get();
    }

    private static void patch(String name, String mergePatch) {
        client.pods().inNamespace(NS).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE), mergePatch);
    }

    private static int requestOn(String gpu) {
        return book.activeUsage().stream().filter(u -> u.uuid().equals(gpu)).mapToInt(u -> u.requestMilli()).sum();
    }

    @Test
    void placedRefusedAndFailedBindsAreToldToThePodAtMostOnceAMinute() {
        TestingClock clock = new TestingClock(Instant.parse("2026-11-24T10:00:00Z"));
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        ExtenderEvents events = cluster.events(clock, metrics);
        ExtenderResource extender = cluster.extender(clock, metrics, events);

        Pod fits = gpuPod("fits", 30, 2048);
        assertThat(extender.filter(new ExtenderArgs(fits, null, List.of(NODE))).nodeNames()).containsExactly(NODE);
        assertThat(extender.bind(bindArgs(fits)).error()).isNull();
        assertThat(events("fits", ExtenderEvents.PLACED)).singleElement().satisfies(e -> {
            assertThat(e.getType()).isEqualTo("Normal");
            assertThat(e.getInvolvedObject().getUid()).isEqualTo(fits.getMetadata().getUid());
            assertThat(e.getSource().getComponent()).isEqualTo("dilu-scheduler-extender");
            assertThat(e.getMessage()).startsWith("placed on node n0: GPU GPU-n0-0 (SM request 30%")
                    .contains("2048 MiB");
        });

        // More memory than the GPU has: the scheduler retries it, here once a second for 100 s.
        Pod tooBig = gpuPod("too-big", 20, 100_000);
        for (int s = 1; s <= 100; s++) {
            clock.advance(Duration.ofSeconds(1));
            assertThat(extender.filter(new ExtenderArgs(tooBig, null, List.of(NODE))).nodeNames()).isEmpty();
            events.flush();
        }
        clock.advance(Duration.ofMinutes(1));
        events.flush();
        List<Event> refused = events("too-big", ExtenderEvents.REFUSED);
        assertThat(refused).extracting(Event::getCount).containsExactly(1, 60, 39);
        assertThat(refused.getFirst().getType()).isEqualTo("Warning");
        assertThat(refused.getFirst().getMessage()).startsWith("no node can take the pod: ").contains("100000 MiB")
                .endsWith("(node n0)");
        assertThat(refused.get(1).getMessage()).contains("(60 times since");

        // A pod something else bound between filter and bind: the Binding fails, the GPUs go back, the pod is told.
        Pod taken = gpuPod("taken", 10, 1024);
        assertThat(extender.filter(new ExtenderArgs(taken, null, List.of(NODE))).nodeNames()).containsExactly(NODE);
        client.bindings().inNamespace(NS).resource(new BindingBuilder().withNewMetadata().withName("taken")
                .endMetadata().withNewTarget().withKind("Node").withApiVersion("v1").withName(NODE).endTarget().build())
                .create();
        assertThat(extender.bind(bindArgs(taken)).error()).startsWith("binding failed");
        assertThat(events("taken", ExtenderEvents.REFUSED)).singleElement()
                .satisfies(e -> assertThat(e.getMessage()).startsWith("binding to node n0 failed"));
        assertThat(metrics.get("dilu_pod_events_total").tag("reason", ExtenderEvents.REFUSED).tag("outcome", "written")
                .counter().count()).isEqualTo(4);
    }
}
