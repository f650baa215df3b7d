package io.dilu.webhook.kube;

import io.dilu.core.contract.QuotaRights;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.webhook.WebhookConfig;
import io.dilu.webhook.admission.AdmissionHandler;
import io.dilu.webhook.admission.PodValidator;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSettings;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.core.Context;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * What admission needs from the cluster: the largest GPU (from the nodes' inventories), whether a namespace
 * allows privileged GPU containers and has the quota right ({@link QuotaRights}), and profiles — all watched, so
 * admission makes no API call — and, read when a pod needs it, the keys of a ConfigMap its envFrom names.
 */
@ApplicationScoped
public class ClusterFacts implements AdmissionHandler.Cluster {

    private final KubernetesClient client;
    private final WebhookConfig config;
    private SharedIndexInformer<Node> nodes;
    private SharedIndexInformer<Namespace> namespaces;
    private SharedIndexInformer<GpuFunctionProfile> profiles;

    public ClusterFacts(KubernetesClient client, WebhookConfig config) {
        this.client = client;
        this.config = config;
    }

    void start(@Observes StartupEvent event) {
        if (!config.watch()) {
            return;
        }
        nodes = client.nodes().runnableInformer(0);
        namespaces = client.namespaces().runnableInformer(0);
        nodes.exceptionHandler((started, t) -> true);
        namespaces.exceptionHandler((started, t) -> true);
        // Profiles are watched too, so that admission never waits on the API server (it runs on the event loop).
        // A typed informer needs no discovery: the webhook starts even before the CRD is installed.
        profiles = client.resources(GpuFunctionProfile.class).inAnyNamespace().runnableInformer(0);
        profiles.exceptionHandler((started, t) -> true);
        nodes.start();
        namespaces.start();
        profiles.start();
    }

    void stop(@Observes ShutdownEvent event) {
        if (nodes != null) {
            nodes.close();
            namespaces.close();
            profiles.close();
        }
    }

    @Override
    public PodValidator.Facts facts(String namespace) {
        Map<String, String> labels = namespaceLabels(namespace);
        return new PodValidator.Facts(largestGpuMemory(), "true".equals(labels.get(config.allowPrivilegedLabel())),
                QuotaRights.granted(labels));
    }

    @Override
    public boolean quotaRights(String namespace) {
        return QuotaRights.granted(namespaceLabels(namespace));
    }

    private OptionalLong largestGpuMemory() {
        if (nodes == null) {
            return OptionalLong.empty();
        }
        return nodes.getStore().list().stream().flatMap(n -> InventoryAnnotation.ofNode(n).stream())
                .mapToLong(g -> g.memoryMib()).max();
    }

    /** The namespace's labels as last seen; none when it is not (yet) seen, which grants nothing. */
    private Map<String, String> namespaceLabels(String namespace) {
        Namespace ns = namespaces == null ? null : namespaces.getStore().getByKey(namespace);
        Map<String, String> labels = ns == null ? null : ns.getMetadata().getLabels();
        return labels == null ? Map.of() : labels;
    }

    /**
     * Read when a pod's envFrom could make an NVIDIA toolkit variable (ToolkitEnv), never watched: the webhook may
     * {@code get} ConfigMaps, one by name, and needs their keys only (values and binaryData keys too are counted,
     * conservatively). A blocking call: refused on the event loop, where it would hold every other review (and the
     * client's own answer) up.
     */
    @Override
    public Optional<Set<String>> configMapKeys(String namespace, String name) {
        if (Context.isOnEventLoopThread()) {
            throw new IllegalStateException("a ConfigMap read was asked for on the event loop");
        }
        ConfigMap cm = client.configMaps().inNamespace(namespace).withName(name).get();
        if (cm == null) {
            return Optional.empty();
        }
        Set<String> keys = new TreeSet<>();
        if (cm.getData() != null) {
            keys.addAll(cm.getData().keySet());
        }
        if (cm.getBinaryData() != null) {
            keys.addAll(cm.getBinaryData().keySet());
        }
        return Optional.of(keys);
    }

    /**
     * A profile's settings as last seen; none when the profile is not seen (one created a moment ago: the pod is
     * refused, and retried) or has no settings yet (still profiling, or failed).
     */
    @Override
    public Optional<ProfileSettings> profile(String namespace, String name) {
        GpuFunctionProfile p = profiles == null ? null : profiles.getStore().getByKey(namespace + "/" + name);
        return p == null ? Optional.empty() : p.settings();
    }
}
