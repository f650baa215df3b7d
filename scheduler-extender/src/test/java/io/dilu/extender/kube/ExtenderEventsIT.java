package io.dilu.extender.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.ExtenderConfig;
import io.dilu.extender.ExtenderResource;
import io.dilu.extender.Refusals;
import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderBindingArgs;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.SmallRyeConfigBuilder;
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
 * is told too. The extender's parts are wired by hand over the test's clock, and events are written on the calling
 * thread, so each assertion sees what the request before it caused.
 */
class ExtenderEventsIT {

    static final String NS = "fns";
    static final String NODE = "n0";
    static RealApiServer api;
    static KubernetesClient client;
    static ClusterWatcher watcher;
    static PlacementBook book;
    static ExtenderConfig config;

    /** The extender's configuration as shipped, with Quarkus' reading of durations ("5s"). */
    static ExtenderConfig defaults() {
        return new SmallRyeConfigBuilder().withMapping(ExtenderConfig.class)
                .withConverter(Duration.class, 200, new DurationConverter()).build().getConfigMapping(ExtenderConfig.class);
    }

    @BeforeAll
    static void start() {
        api = RealApiServer.start();
        client = api.client();
        api.createNamespace(NS, Map.of());
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE)
                .withAnnotations(Map.of(DiluNames.GPU_INVENTORY, InventoryAnnotation.write(
                        List.of(new GpuDevice("GPU-n0-0", 0, "A100-40GB", 40_960, 108))))).endMetadata().build()).create();
        config = defaults();
        book = new PlacementBook(config.placement(), config.defaultMemoryMib(), config.reservationTtl());
        watcher = new ClusterWatcher(client, book);
        watcher.start(null);
        await().atMost(Duration.ofSeconds(30)).until(watcher::synced);
    }

    @AfterAll
    static void stop() {
        if (watcher != null) {
            watcher.stop(null);
        }
        if (api != null) {
            api.close();
        }
    }

    static Pod gpuPod(String name, int sm, long memoryMib) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        return client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME).withAutomountServiceAccountToken(false)
                .addNewContainer().withName("server").withImage("registry.local/fn:1").withNewResources()
                .withRequests(share).withLimits(share).endResources().endContainer().endSpec().build()).create();
    }

    static List<Event> events(String pod, String reason) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> pod.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason()))
                .sorted(Comparator.comparing(Event::getLastTimestamp)).toList();
    }

    static ExtenderBindingArgs bindArgs(Pod pod) {
        return new ExtenderBindingArgs(pod.getMetadata().getName(), NS, pod.getMetadata().getUid(), NODE);
    }

    @Test
    void placedRefusedAndFailedBindsAreToldToThePodAtMostOnceAMinute() {
        TestingClock clock = new TestingClock(Instant.parse("2026-11-24T10:00:00Z"));
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        ExtenderEvents events = new ExtenderEvents(
                ExtenderEvents.recorder(client, Duration.ofMinutes(1), 300, clock, Runnable::run, metrics));
        ExtenderResource extender = new ExtenderResource(book, watcher, new Binder(client, config), clock,
                new Refusals(metrics), metrics, events);

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
