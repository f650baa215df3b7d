package io.dilu.autoscaler.knative;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.LifecycleConformance;
import io.dilu.core.lifecycle.LifecycleWorld;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Core's lifecycle conformance sequences ({@link LifecycleConformance}) with the autoscaler's Kubernetes realizer
 * beside the world's own: every pod the world's cluster makes or changes is written to a fake API server (fabric8's,
 * in CRUD mode) as the kubelet and the scheduler extender would leave it, every intent is carried out there by {@link
 * PodLifecycle} through {@link PaWriter}'s patches, and the pod read back ({@link PodLifecycle#instance}) must say
 * what the world's realizer says: the same park time, wake, refusal, serving condition and deletion. Each write names
 * the pod's UID as the API server gave it, as a watch would have shown it.
 */
@EnableKubernetesMockClient(crud = true)
class PodLifecycleConformanceTest {

    static final String NS = "fns";

    KubernetesClient client;

    @Test
    void theKubernetesRealizerGivesTheWorldsOutcomesOnEverySequence() {
        List<Throwable> broken = new ArrayList<>();
        for (long seed = 1; seed <= LifecycleConformance.SEQUENCES; seed++) {
            broken.addAll(LifecycleConformance.sequence(seed, LifecycleConformance.TROUBLE,
                    Optional.of(new ApiServerMirror(seed))));
        }
        assertThat(broken).as("rules broken, each naming its seed").isEmpty();
    }

    /** The world's pods on the fake API server, the namespace's pods deleted at the start of each sequence. */
    private final class ApiServerMirror implements LifecycleWorld.Mirror {

        private final String revision;
        private final PodLifecycle realizer;
        private final PodLifecycle.Tracked tracked = new PodLifecycle.Tracked();
        /** The world's UIDs, and the ones the API server gave its pods. */
        private final Map<String, String> uids = new HashMap<>();

        ApiServerMirror(long seed) {
            this.revision = "conformance-" + seed;
            client.pods().inNamespace(NS).delete();
            this.realizer = new PodLifecycle(new PaWriter(client), this::pod, new SimpleMeterRegistry());
        }

        /** The intent for the pod as the API server knows it: under the UID it gave. */
        private Intent asServed(Intent intent) {
            Instance w = intent.pod();
            Instance p = new Instance(w.name(), uids.getOrDefault(w.uid(), w.uid()), w.created(), w.ready(), w.address(),
                    w.parkedAt(), w.wakeAsked(), w.wakeFailed(), w.gated(), w.path(), w.deleting());
            return switch (intent) {
                case Intent.Wake x -> new Intent.Wake(p);
                case Intent.Park x -> new Intent.Park(p);
                case Intent.Serving x -> new Intent.Serving(p, x.path());
                case Intent.Delete x -> new Intent.Delete(p);
            };
        }

        private Pod pod(String key) {
            return client.pods().inNamespace(NS).withName(key.substring(key.indexOf('/') + 1)).get();
        }

        @Override
        public void cluster(Instance p) {
            if (p.deleting()) {
                client.pods().inNamespace(NS).withName(p.name()).delete();
                return;
            }
            Map<String, String> annotations = new HashMap<>();
            p.parkedAt().ifPresent(at -> annotations.put(DiluNames.PARKED, at.toString()));
            if (p.wakeAsked()) {
                annotations.put(DiluNames.WAKE, LifecycleWorld.T0.toString());
            }
            if (p.wakeFailed()) {
                annotations.put(DiluNames.WAKE_FAILED, "no room to serve again");
            }
            Pod pod = new PodBuilder().withNewMetadata().withName(p.name()).withUid(p.uid())
                    .withCreationTimestamp(p.created().toString()).addToLabels(KnativeNames.REVISION_LABEL, revision)
                    .withAnnotations(annotations).endMetadata()
                    .withNewSpec().addNewReadinessGate(DiluNames.SERVING_CONDITION).endSpec()
                    .withNewStatus().addNewCondition().withType("Ready").withStatus(p.ready() ? "True" : "False")
                    .endCondition().addNewCondition().withType(DiluNames.SERVING_CONDITION)
                    .withStatus(p.path() == Path.OUT ? "False" : "True")
                    .withReason(p.path() == Path.KEPT ? DiluNames.SERVING_KEPT_REASON : "Serving").endCondition()
                    .endStatus().build();
            Pod written = client.pods().inNamespace(NS).resource(pod).createOr(existing -> existing.update());
            uids.put(p.uid(), written.getMetadata().getUid());
        }

        @Override
        public Optional<Instance> realize(Intent intent, Instance p, Instant now) {
            realizer.write(revision, NS, tracked, asServed(intent), now);
            return Optional.ofNullable(client.pods().inNamespace(NS).withName(p.name()).get()).map(PodLifecycle::instance);
        }
    }
}
