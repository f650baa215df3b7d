package io.dilu.autoscaler.knative;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.kube.PodShares;
import io.dilu.testing.KubeClients;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Kubernetes realizer's failure paths, on a real kube-apiserver and on one that never answers: a write the API
 * server refuses (a pod re-created under the same name: its park names the old UID, a conflict), an API server that is
 * not there, and one that takes the request and never answers. Each is a failed write: logged, the pod's later writes
 * in the plan not made (another pod's are), and the call returns.
 */
class PodLifecycleIT {

    static final String NS = "fns";
    static final Instant NOW = Instant.parse("2026-12-02T12:00:00Z");

    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS);

    /** A serving pod of Dilu's class: the readiness gate on dilu.io/serving, that condition True, Ready. */
    static Pod servingPod(String name, String created) {
        return new PodBuilder().withNewMetadata().withName(name).withCreationTimestamp(created)
                .addToLabels(KnativeNames.REVISION_LABEL, "r").endMetadata().withNewSpec()
                .addNewReadinessGate(DiluNames.SERVING_CONDITION).addNewContainer().withName("user").withImage("fn")
                .endContainer().endSpec().build();
    }

    /** The pod as the API server has it now, Ready and serving as the kubelet and the extender would have left it. */
    static Pod serving(KubernetesClient client, String name) {
        Pod p = client.pods().inNamespace(NS).withName(name).get();
        p.setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().addNewCondition().withType("Ready")
                .withStatus("True").endCondition().addNewCondition().withType(DiluNames.SERVING_CONDITION)
                .withStatus("True").endCondition().build());
        return client.pods().inNamespace(NS).resource(p).updateStatus();
    }

    @Test
    void aParkThatNamesAPodGoneConflictsAndTheSamePodsLaterWritesAreNotMade() {
        KubernetesClient client = API.client();
        client.pods().inNamespace(NS).resource(servingPod("old", "2026-12-02T10:00:00Z")).create();
        client.pods().inNamespace(NS).resource(servingPod("new", "2026-12-02T11:00:00Z")).create();
        InstanceLifecycle seen = new InstanceLifecycle(List.of(PodLifecycle.instance(serving(client, "old")),
                PodLifecycle.instance(serving(client, "new"))));
        // "new" is deleted and created again under its name: what the autoscaler read names a UID that is gone.
        client.pods().inNamespace(NS).withName("new").withGracePeriod(0).delete();
        client.pods().inNamespace(NS).withName("new").waitUntilCondition(java.util.Objects::isNull, 30,
                java.util.concurrent.TimeUnit.SECONDS);
        client.pods().inNamespace(NS).resource(servingPod("new", "2026-12-02T11:30:00Z")).create();
        serving(client, "new");

        PodLifecycle realizer = new PodLifecycle(new PaWriter(client),
                key -> client.pods().inNamespace(NS).withName(key.substring(key.indexOf('/') + 1)).get(),
                new SimpleMeterRegistry());
        // Nothing serving, both parked, the last kept: "new" (the newest) is marked kept, then parked; "old" is parked
        // out of the path. The kept mark names the UID gone: refused, and "new"'s park after it is not made.
        realizer.bring("fns/r", NS, new PodLifecycle.Tracked(), seen, new RevisionScaler.Decision(0, 2, "test", true), NOW);

        Pod recreated = client.pods().inNamespace(NS).withName("new").get();
        assertThat(PodShares.kept(recreated)).as("the kept mark of the UID gone was refused").isFalse();
        assertThat(PodShares.serving(recreated)).as("its condition untouched").isTrue();
        assertThat(recreated.getMetadata().getAnnotations() == null ? java.util.Map.of()
                : recreated.getMetadata().getAnnotations()).as("nor was it parked").doesNotContainKey(DiluNames.PARKED);
        Pod old = client.pods().inNamespace(NS).withName("old").get();
        assertThat(old.getMetadata().getAnnotations()).as("the other pod's writes were made")
                .containsEntry(DiluNames.PARKED, NOW.toString());
        assertThat(PodShares.serving(old)).as("out of the path").isFalse();
    }

    @Test
    void anApiServerThatIsGoneOrNeverAnswersFailsThePodsFirstWriteAndNoMore() throws Exception {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(
                PodLifecycle.instance(servingPod("a", "2026-12-02T10:00:00Z")),
                PodLifecycle.instance(servingPod("b", "2026-12-02T11:00:00Z"))).stream()
                .map(p -> new InstanceLifecycle.Instance(p.name(), "uid-" + p.name(), p.created(), true, null,
                        p.parkedAt(), false, false, true, InstanceLifecycle.Path.IN, false)).toList());
        // One of the two parked: "b" (the newest) is parked, then taken out of the path.
        RevisionScaler.Decision oneParked = new RevisionScaler.Decision(1, 1, "test", false);
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            AtomicInteger requests = new AtomicInteger();
            List<Socket> held = new ArrayList<>();
            Thread accept = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        held.add(silent.accept()); // read nothing, answer nothing
                        requests.incrementAndGet();
                    }
                } catch (IOException closed) {
                    // the test is over
                }
            });
            try (KubernetesClient hung = KubeClients.of(new ConfigBuilder().withMasterUrl("http://" + silent
                    .getInetAddress().getHostAddress() + ":" + silent.getLocalPort()).withRequestTimeout(300)
                    .withConnectionTimeout(300).withRequestRetryBackoffLimit(0).build())) {
                PodLifecycle realizer = new PodLifecycle(new PaWriter(hung), key -> null, new SimpleMeterRegistry());
                realizer.bring("fns/r", NS, new PodLifecycle.Tracked(), pods, oneParked, NOW);
            }
            // Two writes planned (the park, then the path): the park timed out, the path was not written after it.
            assertThat(requests.get()).as("connections the writes opened").isEqualTo(1);
            silent.close();
            accept.join();
            for (Socket s : held) {
                s.close();
            }
        }
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        try (KubernetesClient gone = KubeClients.of(new ConfigBuilder().withMasterUrl("http://127.0.0.1:" + port)
                .withRequestTimeout(300).withConnectionTimeout(300).withRequestRetryBackoffLimit(0).build())) {
            PodLifecycle realizer = new PodLifecycle(new PaWriter(gone), key -> null, new SimpleMeterRegistry());
            realizer.bring("fns/r", NS, new PodLifecycle.Tracked(), pods, oneParked, NOW); // logged, not thrown
        }
    }
}
