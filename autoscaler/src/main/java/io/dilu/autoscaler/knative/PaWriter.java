package io.dilu.autoscaler.knative;

import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.contract.DiluNames;
import io.dilu.kube.ParkingPatch;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jboss.logging.Logger;

/**
 * Writes what the reconciler decided: the target's scale, the ServerlessService's spec, the PodAutoscaler's status, and
 * the parking of its pods.
 */
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

    /** Parks the pod (its UID checked): the scheduler extender gives its SM booking back, the node agent its guarantee. */
    public void park(String namespace, String name, String uid, Instant now) {
        client.pods().inNamespace(namespace).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                ParkingPatch.park(uid, now));
    }

    /** Asks the parked pod to serve again: the scheduler extender books its SM request where there is room, or says not. */
    public void wake(String namespace, String name, String uid, Instant now) {
        client.pods().inNamespace(namespace).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                ParkingPatch.wake(uid, now));
    }

    /**
     * A parked pod's {@code dilu.io/serving} condition: True to leave it in the request path (with {@link
     * DiluNames#SERVING_KEPT_REASON} where it is kept there), False to take it out.
     */
    public void serving(String namespace, String name, String uid, List<PodCondition> conditions, InstanceLifecycle.Path path,
            Instant now) {
        client.pods().inNamespace(namespace).withName(name).subresource("status").patch(PatchContext.of(PatchType.JSON),
                switch (path) {
                    case IN -> ParkingPatch.servingCondition(uid, conditions, true, "LastInstance", "parked, and left in the "
                            + "request path as the revision's last instance", now);
                    case KEPT -> ParkingPatch.servingCondition(uid, conditions, true, DiluNames.SERVING_KEPT_REASON, "parked, "
                            + "and kept in the request path as the last instance of a revision that may not reach zero", now);
                    case OUT -> ParkingPatch.servingCondition(uid, conditions, false, "Parked", "parked by the Dilu autoscaler: "
                            + "its model stays in GPU memory, its SM booking is given back", now);
                });
    }

    /** Deletes a pod (its ReplicaSet replaces it). */
    public void delete(String namespace, String name) {
        client.pods().inNamespace(namespace).withName(name).delete();
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
