package io.dilu.deviceplugin.agent;

import io.dilu.kube.events.EventCounts;
import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Priority;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.FakeHook;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.kube.events.EventThrottle;
import io.dilu.kube.events.PodEventRecorder;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's events on a real kube-apiserver: a GPU entering EMERGENCY is told to the pods sharing it, refused
 * memory allocations to their pod, and a tenant that refuses itself memory every second gets one event a minute,
 * with the rest counted in it. The token loop runs period by period under the test's hand, the hook is played by
 * {@link FakeHook}, and time is the test's clock.
 */
class NodeEventsIT {

    static final String NODE = "gpu-node-1";
    static final String NS = "fns";
    static final TokenParameters PARAMS = TokenParameters.DEFAULTS.withMaxTokens(5_400);
    static RealApiServer api;
    static KubernetesClient client;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startApiServer() {
        api = RealApiServer.start();
        client = api.client();
        api.createNamespace(NS, Map.of());
    }

    @AfterAll
    static void stopApiServer() {
        if (api != null) {
            api.close();
        }
    }

    static Pod pod(String name) {
        return client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withNodeName(NODE).withAutomountServiceAccountToken(false).addNewContainer()
                .withName("server").withImage("registry.local/fn:1").endContainer().endSpec().build()).create();
    }

    static List<Event> events(String pod, String reason) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> pod.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason()))
                .sorted(Comparator.comparing(Event::getLastTimestamp)).toList();
    }

    /** A share of {@code gpu} handed to container "server" of {@code pod}, as Allocate and the kubelet settle it. */
    static String share(Allocations allocations, GpuDevice gpu, int from, Pod pod, Priority priority) {
        List<String> ids = IntStream.range(from, from + 30).mapToObj(i -> GpuSmDevicePlugin.deviceId(gpu, i)).toList();
        String id = allocations.allocate(gpu, ids).getEnvsOrThrow("DILU_ALLOCATION");
        allocations.apply(List.of(new Reconciler.Bind(id, new ContainerRef(NS, pod.getMetadata().getName(), "server"),
                new Allocation.ShareQuota(60, priority, Double.NaN, 1024), false)));
        return id;
    }

    @Test
    void emergenciesAndMemoryRefusalsReachThePodsAtMostOnceAMinuteEach() throws Exception {
        Pod infer = pod("infer");
        Pod train = pod("train");
        List<GpuDevice> gpus = EmulatedInventory.parse(NODE, "1x A100-40GB, 108 SMs").gpus();
        TestingClock clock = new TestingClock(Instant.parse("2026-11-24T10:00:00Z"));
        Path root = Files.createDirectories(tmp.resolve("containers"));
        Allocations.Paths paths = new Allocations.Paths(root, "/var/run/dilu/control", "/opt/dilu/lib/libdilu-hook.so",
                "/opt/dilu/lib/libdilu-hook.so", tmp.resolve("ld.so.preload"), Optional.empty());
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        try (TokenManager tokens = new TokenManager(1, PARAMS, 1, clock, 16)) {
            Allocations allocations = new Allocations(paths, gpus, tokens, clock, List::of);
            String inferId = share(allocations, gpus.getFirst(), 0, infer, Priority.SLO);
            String trainId = share(allocations, gpus.getFirst(), 30, train, Priority.BEST_EFFORT);
            // Events are written on the calling thread here, so that the test sees them as soon as a sweep returns.
            PodEventRecorder recorder = new PodEventRecorder(new PodEventRecorder.Source("dilu-node-agent", NODE, NODE),
                    new EventThrottle(Duration.ofMinutes(1), 30, 1024), clock,
                    e -> client.v1().events().inNamespace(e.getMetadata().getNamespace()).resource(e).create(),
                    Runnable::run, new EventCounts(metrics, List.of(NodeEvents.THROTTLE_EMERGENCY, NodeEvents.MEMORY_REFUSED)));
            NodePods pods = () -> List.of(PodViews.of(infer, Map.of()), PodViews.of(train, Map.of()));
            NodeEvents events = new NodeEvents(1, tokens, allocations, pods, recorder);
            events.sweep();

            // The SLO container's cycle goes from its best, 10 ms, to 40 ms while training launches beside it.
            FakeHook inferHook = FakeHook.of(allocations.tenants().get(inferId).block());
            FakeHook trainHook = FakeHook.of(allocations.tenants().get(trainId).block());
            inferHook.report(100, 10_000_000);
            trainHook.report(1_000, 0);
            tick(tokens, clock);
            assertThat(tokens.gpu(0).emergencies()).isZero();
            inferHook.report(200, 40_000_000);
            trainHook.report(2_000, 0);
            tick(tokens, clock);
            assertThat(tokens.gpu(0).emergencies()).isEqualTo(1);
            events.sweep();

            List<Event> slo = events("infer", NodeEvents.THROTTLE_EMERGENCY);
            assertThat(slo).singleElement().satisfies(e -> {
                assertThat(e.getType()).isEqualTo("Warning");
                assertThat(e.getInvolvedObject().getUid()).isEqualTo(infer.getMetadata().getUid());
                assertThat(e.getSource().getComponent()).isEqualTo("dilu-node-agent");
                assertThat(e.getSource().getHost()).isEqualTo(NODE);
                assertThat(e.getMessage()).contains("GPU " + gpus.getFirst().uuid() + " entered EMERGENCY")
                        .contains("container server runs up to its limit");
            });
            assertThat(events("train", NodeEvents.THROTTLE_EMERGENCY)).singleElement()
                    .satisfies(e -> assertThat(e.getMessage()).contains("container server (best-effort) is throttled"));

            // Emergencies every second for ten seconds (well within the 30 s the controller remembers the best
            // cycle for): nothing more within the minute.
            long launched = 200;
            for (int s = 0; s < 10; s++) {
                tick(tokens, clock); // no launch: out of the emergency
                launched += 100;
                inferHook.report(launched, 40_000_000);
                trainHook.report(2_000 + launched, 0);
                tick(tokens, clock); // and in again
                clock.advance(Duration.ofSeconds(1));
                events.sweep();
            }
            assertThat(tokens.gpu(0).emergencies()).isEqualTo(11);
            assertThat(events("infer", NodeEvents.THROTTLE_EMERGENCY)).hasSize(1);

            // Training asks for more memory than its share, once a second for 100 s: three events in all, the
            // occurrences between them counted.
            for (int s = 1; s <= 100; s++) {
                trainHook.setMemoryRefusals(s);
                clock.advance(Duration.ofSeconds(1));
                events.sweep();
                recorder.flush();
            }
            clock.advance(Duration.ofMinutes(1));
            recorder.flush();
            List<Event> refused = events("train", NodeEvents.MEMORY_REFUSED);
            assertThat(refused).extracting(Event::getCount).containsExactly(1, 60, 39);
            assertThat(refused.getFirst().getMessage()).contains("container server: 1 GPU memory allocation(s) refused")
                    .contains("its share of 1024 MiB");
            assertThat(refused.get(1).getMessage()).contains("(60 times since");
            assertThat(events("infer", NodeEvents.MEMORY_REFUSED)).isEmpty();
            assertThat(metrics.get("dilu_pod_events_total").tag("reason", NodeEvents.MEMORY_REFUSED)
                    .tag("outcome", "written").counter().count()).isEqualTo(3);
            // The emergencies held back since the first event went out once their minute was over.
            assertThat(events("infer", NodeEvents.THROTTLE_EMERGENCY)).hasSize(2)
                    .last().satisfies(e -> assertThat(e.getCount()).isEqualTo(10));
        }
    }

    /** One token period, 5 ms on. */
    private static void tick(TokenManager tokens, TestingClock clock) {
        clock.advance(Duration.ofMillis(5));
        tokens.gpu(0).tick(clock.instant(), System.nanoTime());
    }
}
