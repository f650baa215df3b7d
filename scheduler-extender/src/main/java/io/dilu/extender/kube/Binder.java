package io.dilu.extender.kube;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.extender.ExtenderConfig;
import io.dilu.kube.AssignedGpusPatch;
import io.dilu.kube.ParkingPatch;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.RequestConfigBuilder;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Binds a pod: first its GPUs on the pod ({@code dilu.io/assigned-gpus}), then the Binding to the node. All the
 * API calls of one bind share {@code dilu.extender.bind-timeout}, so the answer reaches kube-scheduler before its
 * own {@code httpTimeout} makes it give up on the extender.
 */
@ApplicationScoped
@Startup // a bad dilu.extender.bind-timeout stops the start, not the first bind
public class Binder {

    private final KubernetesClient client;
    private final Duration timeout;

    public Binder(KubernetesClient client, ExtenderConfig config) {
        if (config.bindTimeout().toMillis() < 1) {
            throw new IllegalArgumentException("dilu.extender.bind-timeout must be at least 1ms, got " + config.bindTimeout());
        }
        this.client = client;
        this.timeout = config.bindTimeout();
    }

    /**
     * Binds pod {@code namespace/name} with {@code uid} to {@code node}, writing {@code gpus} on it first when
     * given. The annotation goes first so that a pod never runs on a node without saying which GPU it was given; a pod
     * with a readiness gate on {@code dilu.io/serving} then gets that condition True (its SM request is booked), before
     * the Binding, so that it is ready as soon as its containers are.
     *
     * @throws KubernetesClientException when a call fails or the time is up; what was written stays written
     */
    public void bind(String namespace, String name, String uid, String node, Optional<AssignedGpus> gpus) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            if (gpus.isPresent()) {
                Pod read = within(deadline).pods().inNamespace(namespace).withName(name).get();
                boolean hasAnnotations = read != null && read.getMetadata().getAnnotations() != null
                        && !read.getMetadata().getAnnotations().isEmpty();
                within(deadline).pods().inNamespace(namespace).withName(name)
                        .patch(PatchContext.of(PatchType.JSON), AssignedGpusPatch.json(uid, hasAnnotations, gpus.get()));
                if (read != null && PodShares.servingGate(read)) {
                    within(deadline).pods().inNamespace(namespace).withName(name).subresource("status")
                            .patch(PatchContext.of(PatchType.JSON), ParkingPatch.servingCondition(uid,
                                    read.getStatus() == null ? null : read.getStatus().getConditions(), true, "Booked",
                                    "its SM request is booked on its GPUs by the Dilu scheduler extender", Instant.now()));
                }
            }
            Binding binding = new BindingBuilder().withNewMetadata().withName(name).withNamespace(namespace).withUid(uid)
                    .endMetadata().withNewTarget().withKind("Node").withApiVersion("v1").withName(node).endTarget().build();
            within(deadline).bindings().inNamespace(namespace).resource(binding).create();
        } catch (KubernetesClientException e) {
            if (System.nanoTime() - deadline >= 0) {
                throw new KubernetesClientException("the API server did not answer within dilu.extender.bind-timeout ("
                        + timeout.toMillis() + "ms)", e);
            }
            throw e;
        }
    }

    /**
     * The client for the next call: it waits no longer than the bind has left, and does not retry, since a
     * retry would start after the time is up.
     */
    private KubernetesClient within(long deadline) {
        long leftMillis = Duration.ofNanos(deadline - System.nanoTime()).toMillis();
        if (leftMillis < 1) {
            throw new KubernetesClientException("the bind ran out of dilu.extender.bind-timeout (" + timeout.toMillis()
                    + "ms) between API calls");
        }
        var request = new RequestConfigBuilder(client.getConfiguration().getRequestConfig())
                .withRequestTimeout((int) Math.min(leftMillis, Integer.MAX_VALUE)).withRequestRetryBackoffLimit(0).build();
        return client.newClient(request).adapt(KubernetesClient.class);
    }
}
