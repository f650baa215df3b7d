package io.dilu.e2e.cluster;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.e2e.KnativeCrds;
import io.dilu.loadgen.LoadSettings;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.readiness.Readiness;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * An inference function on the local cluster as Knative would run it, without Knative: a Deployment whose pods
 * carry a revision's labels (so the webhook treats them as serving instances and the autoscaler finds them by
 * revision), an emulated model server ({@code emu-serve}) with a readiness probe and queue-proxy's Stat endpoint,
 * and, when scaled by Dilu, a PodAutoscaler of Dilu's class naming the rates one instance serves.
 */
public final class ServingFunction {

    public static final int SERVE_PORT = 8080;
    /** Where the autoscaler scrapes queue-proxy's Stat (its {@code queue-proxy-port}, 9090 as Knative's). */
    public static final int STATS_PORT = 9090;
    /**
     * How the demo and {@code ./dilu bench coscaling-cluster} load a function: at most 256 of its requests in flight,
     * the rest waiting in the generator's FIFO with their wait counted. A bound, because the HTTP/1.1 client opens a
     * connection per request in flight. No lower, because in Knative a burst's demand reaches what the autoscaler
     * reads: queue-proxy counts every request it is sent and, at container concurrency 0 (Knative's default),
     * forwards it, and the activator reports what it buffers. A client that holds requests back hides them from every
     * autoscaler. At 64 in flight, as before issue 47's second step, the demo's one pod reported about 80 rps of a 160
     * rps burst (what it served), and its scale-out was sized for that.
     */
    public static final LoadSettings LOAD = new LoadSettings(Duration.ofSeconds(30), 256, 100_000);
    /**
     * The connections one pod's emu-serve takes at once ({@code --max-connections}; beyond them it answers 503):
     * twice what the generator may have in flight, so that the kubelet's readiness probe always finds one. In Knative
     * the kubelet probes queue-proxy, never through the requests' queue; at the generator's bound itself, a pod with
     * every request of a burst went unready on a 503 to its probe and out of the routing for the rest of the burst.
     */
    static final int MAX_CONNECTIONS = 2 * LOAD.maxOutstanding();

    /**
     * The pod annotations of a function Dilu's autoscaler scales: its class, as a Knative revision gives its pods. The
     * webhook then gives them the readiness gate on {@code dilu.io/serving} that parking needs (without it a released
     * pod would stay in the request path, so the autoscaler lets it go instead of parking it).
     */
    public static final Map<String, String> DILU_SCALED = Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS);

    private ServingFunction() {}

    /**
     * Applies the function's Deployment at {@code replicas}.
     *
     * @param sm the SM request, percent
     * @param annotations pod annotations (a static share sets {@link DiluNames#SM_LIMIT} to the request)
     * @param serveArgs emu-serve's model arguments ({@code --batch …}, {@code --load-ms …})
     */
    public static void deploy(KubernetesClient client, String ns, String name, int replicas, int sm, int memoryMib,
            Map<String, String> annotations, String serveArgs) {
        Container server = new ContainerBuilder().withName("server").withImage("dilu.local/workload:0.1.0")
                .withImagePullPolicy("Never").withCommand("/bin/sh", "-c", "exec emu-serve --port " + SERVE_PORT
                        + " --stats-port " + STATS_PORT + " --max-connections " + MAX_CONNECTIONS + " " + serveArgs)
                .withNewResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)))
                .addToLimits(DiluNames.GPU_MEMORY, new Quantity(Integer.toString(memoryMib))).endResources()
                .withNewReadinessProbe().withNewHttpGet().withPath("/healthz").withNewPort(SERVE_PORT).endHttpGet()
                .withPeriodSeconds(1).withFailureThreshold(1).endReadinessProbe().build();
        client.apps().deployments().inNamespace(ns).resource(new DeploymentBuilder()
                .withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withReplicas(replicas).withNewSelector().addToMatchLabels("app", name).endSelector()
                .withNewStrategy().withType("RollingUpdate").endStrategy()
                .withNewTemplate().withNewMetadata().addToLabels("app", name)
                .addToLabels(KnativeNames.SERVICE_LABEL, name).addToLabels(KnativeNames.REVISION_LABEL, name)
                .addToAnnotations(annotations).endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L).withContainers(server).endSpec()
                .endTemplate().endSpec().build()).serverSideApply();
    }

    /** Where a pod serves, when it is Ready and not going: what a load generator may send to. */
    public static Optional<URI> target(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() == null && pod.getStatus() != null
                && pod.getStatus().getPodIP() != null && Readiness.isPodReady(pod)
                ? Optional.of(URI.create("http://" + pod.getStatus().getPodIP() + ":" + SERVE_PORT)) : Optional.empty();
    }

    /**
     * Hands the function's Deployment to Dilu's autoscaler: a PodAutoscaler of its class with the rates one
     * instance serves at its SM request and at its limit (what a GpuFunctionProfile would give it).
     */
    public static void autoscale(KubernetesClient client, String ns, String name, double rpsAtRequest, double rpsAtLimit) {
        client.genericKubernetesResources(KnativeCrds.PA).inNamespace(ns).resource(new GenericKubernetesResourceBuilder()
                .withApiVersion(KnativeNames.PODAUTOSCALER_API_VERSION).withKind(KnativeNames.PODAUTOSCALER_KIND)
                .withNewMetadata().withName(name).withNamespace(ns)
                .withAnnotations(Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS,
                        DiluNames.SERVING_RPS, Double.toString(rpsAtRequest),
                        DiluNames.SERVING_RPS_AT_LIMIT, Double.toString(rpsAtLimit)))
                .endMetadata()
                .addToAdditionalProperties("spec", Map.of("protocolType", "http1", "scaleTargetRef",
                        Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", name)))
                .build()).serverSideApply();
    }
}
