package io.dilu.extender.kube;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.kube.AssignedGpusPatch;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import jakarta.enterprise.context.ApplicationScoped;

/** Binds a pod: first its GPUs on the pod ({@code dilu.io/assigned-gpus}), then the Binding to the node. */
@ApplicationScoped
public class Binder {

    private final KubernetesClient client;

    public Binder(KubernetesClient client) {
        this.client = client;
    }

    /** The annotation goes first so that a pod never runs on a node without saying which GPU it was given. */
    public void annotate(String namespace, String name, String uid, AssignedGpus gpus) {
        var pod = client.pods().inNamespace(namespace).withName(name);
        boolean hasAnnotations = pod.get() instanceof io.fabric8.kubernetes.api.model.Pod p
                && p.getMetadata().getAnnotations() != null && !p.getMetadata().getAnnotations().isEmpty();
        pod.patch(PatchContext.of(PatchType.JSON), AssignedGpusPatch.json(uid, hasAnnotations, gpus));
    }

    /** Whether the pod asks for a {@code dilu.io} resource (false when it is gone). */
    public boolean asksForGpus(String namespace, String name) {
        try {
            var pod = client.pods().inNamespace(namespace).withName(name).get();
            return pod != null && io.dilu.kube.PodShares.of(pod).isPresent();
        } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
            return true; // cannot tell: refuse the bind rather than bind a GPU pod without its GPUs
        }
    }

    public void bind(String namespace, String name, String uid, String node) {
        Binding binding = new BindingBuilder().withNewMetadata().withName(name).withNamespace(namespace).withUid(uid)
                .endMetadata().withNewTarget().withKind("Node").withApiVersion("v1").withName(node).endTarget().build();
        client.bindings().inNamespace(namespace).resource(binding).create();
    }
}
