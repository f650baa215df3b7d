package io.dilu.extender.kube;

import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.Map;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Feeds the {@link PlacementBook} from the API server: Nodes with their GPU inventory, Pods with their shares
 * and assignments. On start the informers list everything, so a restarted extender knows every placement
 * before it answers the scheduler (filter refuses to decide until then). Their caches also tell which pods and
 * nodes exist, so that what a request names is checked against the API server's objects, not taken on trust.
 */
@ApplicationScoped
public class ClusterWatcher {

    private static final Logger LOG = Logger.getLogger(ClusterWatcher.class);

    private final KubernetesClient client;
    private final PlacementBook book;
    private final ParkingWriter parking;
    private SharedIndexInformer<Node> nodes;
    private SharedIndexInformer<Pod> pods;

    public ClusterWatcher(KubernetesClient client, PlacementBook book, ParkingWriter parking) {
        this.client = client;
        this.book = book;
        this.parking = parking;
    }

    void start(@Observes StartupEvent event) {
        nodes = client.nodes().runnableInformer(0);
        nodes.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Node node) {
                put(node);
            }

            @Override
            public void onUpdate(Node before, Node after) {
                put(after);
            }

            @Override
            public void onDelete(Node node, boolean unknownFinalState) {
                book.removeNode(node.getMetadata().getName());
            }
        });
        pods = client.pods().inAnyNamespace().runnableInformer(0);
        pods.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                observe(pod);
            }

            @Override
            public void onUpdate(Pod before, Pod after) {
                observe(after);
            }

            @Override
            public void onDelete(Pod pod, boolean unknownFinalState) {
                book.forget(pod.getMetadata().getUid());
                parking.handBack(book.handBack());
            }
        });
        // Keep retrying while the API server is away.
        nodes.exceptionHandler((started, t) -> true);
        pods.exceptionHandler((started, t) -> true);
        nodes.start();
        pods.start();
        LOG.info("watching Nodes and Pods");
    }

    /** Books the pod as it is now, and writes what its parking asks (a wake's answer) without waiting for it here. */
    private void observe(Pod pod) {
        long at = System.nanoTime();
        PodShares.of(pod).ifPresent(share -> parking.answer(pod, book.observe(share), at));
        parking.handBack(book.handBack());
    }

    private void put(Node node) {
        Map<String, String> annotations = node.getMetadata().getAnnotations();
        String inventory = annotations == null ? null : annotations.get(InventoryAnnotation.KEY);
        String name = node.getMetadata().getName();
        if (inventory == null) {
            book.removeNode(name);
            return;
        }
        try {
            book.putNode(name, InventoryAnnotation.read(inventory));
        } catch (IllegalArgumentException e) {
            LOG.warnf("node %s: %s; its GPUs are left out", name, e.getMessage());
            book.removeNode(name);
        }
    }

    /** Whether both watches have listed everything once. */
    public boolean synced() {
        return nodes != null && pods != null && nodes.hasSynced() && pods.hasSynced();
    }

    /**
     * The pod {@code namespace/name} as the watch last saw it, when its UID is {@code uid}: a name alone may
     * belong to a pod re-created since, and a UID alone is what a forged request would bring. The watch may be
     * a moment behind the scheduler's for a pod just created: {@link #podOrRead} covers that.
     */
    public Optional<Pod> pod(String namespace, String name, String uid) {
        if (pods == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(pods.getStore().getByKey(Cache.namespaceKeyFunc(namespace, name)))
                .filter(p -> uid.equals(p.getMetadata().getUid()));
    }

    /**
     * The pod as {@link #pod} sees it or, when the watch has not delivered it yet, as the API server has it now
     * (one GET, UID checked). kube-scheduler's own watch is often a moment ahead of ours for a pod just
     * created; refusing it would park the pod in kube-scheduler's unschedulable queue until some cluster event
     * or the queue's flush (60 s in kube-scheduler 1.20), which a pod started on its own sees as a minute's
     * delay. A request naming no pod that exists still finds none.
     */
    public Optional<Pod> podOrRead(String namespace, String name, String uid) {
        Optional<Pod> seen = pod(namespace, name, uid);
        if (seen.isPresent() || pods == null) {
            return seen;
        }
        try {
            return Optional.ofNullable(client.pods().inNamespace(namespace).withName(name).get())
                    .filter(p -> uid.equals(p.getMetadata().getUid()));
        } catch (KubernetesClientException e) {
            LOG.debugf("reading pod %s/%s failed: %s", namespace, name, e.getMessage());
            return Optional.empty();
        }
    }

    /** Whether the watch has seen Node {@code name}: the API server binds a pod to a node that does not exist. */
    public boolean nodeExists(String name) {
        return nodes != null && nodes.getStore().getByKey(name) != null;
    }

    void stop(@Observes ShutdownEvent event) {
        if (nodes != null) {
            nodes.close();
        }
        if (pods != null) {
            pods.close();
        }
    }
}
