package io.dilu.autoscaler.knative;

import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.Objects;
import org.jboss.logging.Logger;

/** Writes what the reconciler decided: the target's scale, the ServerlessService's spec, the PodAutoscaler's status. */
public final class PaWriter {

    private static final Logger LOG = Logger.getLogger(PaWriter.class);

    private final KubernetesClient client;

    public PaWriter(KubernetesClient client) {
        this.client = client;
    }

    /** Scales the target through its scale subresource; only Deployments, which is what Knative revisions are. */
    public void scale(PodAutoscaler pa, int replicas) {
        ObjectReference ref = pa.getSpec() == null ? null : pa.getSpec().scaleTargetRef();
        if (ref == null || ref.getName() == null) {
            LOG.warnf("PodAutoscaler %s has no scaleTargetRef; not scaled", pa.key());
            return;
        }
        String kind = Objects.requireNonNullElse(ref.getKind(), "Deployment");
        if (!"Deployment".equals(kind)) {
            LOG.warnf("scale target %s %s is not a Deployment; not scaled", kind, ref.getName());
            return;
        }
        client.apps().deployments().inNamespace(pa.getMetadata().getNamespace()).withName(ref.getName()).scale(replicas);
    }

    /** Creates the ServerlessService, or updates its spec when it differs; returns it as the API server has it. */
    public ServerlessService sks(ServerlessService desired, ServerlessService existing) {
        var api = client.resources(ServerlessService.class).inNamespace(desired.getMetadata().getNamespace());
        if (existing == null) {
            try {
                return api.resource(desired).create();
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
                return api.withName(desired.getMetadata().getName()).get(); // created a moment ago, not in the watch yet
            }
        }
        if (desired.getSpec().equals(existing.getSpec())) {
            return existing;
        }
        return api.withName(existing.getMetadata().getName()).edit(s -> {
            s.setSpec(desired.getSpec());
            return s;
        });
    }

    /**
     * Writes the status when it differs from the one the PodAutoscaler has, retrying a conflict with a fresh copy.
     *
     * @return whether a status was written
     */
    public boolean status(PodAutoscaler pa, PodAutoscaler.Status status) {
        var api = client.resources(PodAutoscaler.class).inNamespace(pa.getMetadata().getNamespace());
        PodAutoscaler current = pa;
        for (int attempt = 0; attempt < 3 && current != null; attempt++) {
            if (status.equals(current.getStatus())) {
                return false;
            }
            // A copy: the PodAutoscaler came from the informer's cache, which must not change under it.
            PodAutoscaler update = new PodAutoscaler();
            update.setMetadata(current.getMetadata());
            update.setSpec(current.getSpec());
            update.setStatus(status);
            try {
                api.resource(update).updateStatus();
                return true;
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
                current = api.withName(pa.getMetadata().getName()).get();
            }
        }
        return false;
    }
}
