package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.ServerSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The autoscaler installed to replace Knative's (its own process, {@code DILU_AUTOSCALER_MODE=replace}) against a
 * real kube-apiserver with Knative's PodAutoscaler and ServerlessService CRDs. The test plays Knative's revision
 * reconciler (PodAutoscalers and Deployments) and Knative's activator ({@link PlayedActivator}): a pod in
 * {@code knative-serving} labelled {@code app=activator}, Running at 127.0.0.30, from which it opens a websocket to
 * the autoscaler's activator port and reports the requests it holds in Knative's wire format. The autoscaler ticks
 * once an hour in this test, so a revision that wakes was woken by the report itself, not by a tick.
 */
class ActivatorStatsIT {

    static final String NS = "fns";
    static final Path LOGS = TestApiServer.LOGS;

    static final String ACTIVATOR = "activator-7d9f-x2x4z";
    static final String ACTIVATOR_ADDRESS = "127.0.0.30";

    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS, "dilu-system", KnativeNames.SERVING_NAMESPACE);
    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess autoscaler;
    static int port;
    static int statsPort;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        api = API.api();
        client = API.client();
        KnativeCrds.install(api);
        // The revisions exist before the autoscaler starts: it lists them before it leads, and its first tick
        // (the only one within the test, the tick being an hour) settles both at zero.
        revision("sleepy", Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS,
                KnativeNames.INITIAL_SCALE, "0", DiluNames.SERVING_RPS, "10"));
        // knative.dev, "Configuring targets": a concurrency target of 10 at 70% utilization is a pod per 7
        // requests in flight; 35 held by the activator ask for 5 pods.
        revision("kpa", Map.of(KnativeNames.CLASS, KnativeNames.KPA_CLASS,
                KnativeNames.TARGET, "10", KnativeNames.INITIAL_SCALE, "0"));
        // Whom the negative cases try to wake.
        revision("victim", Map.of(KnativeNames.CLASS, KnativeNames.KPA_CLASS,
                KnativeNames.INITIAL_SCALE, "0"));
        PlayedActivator.register(client, KnativeNames.SERVING_NAMESPACE, ACTIVATOR, ACTIVATOR_ADDRESS, PlayedActivator.LABELS);
        port = freePort();
        statsPort = freePort();
        autoscaler = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG",
                api.writeKubeconfig(tmp.resolve("kubeconfig")).toString(), "QUARKUS_HTTP_PORT", Integer.toString(port),
                "DILU_AUTOSCALER_ACTIVATOR_PORT", Integer.toString(statsPort),
                "DILU_AUTOSCALER_MODE", "replace", "DILU_AUTOSCALER_TICK", "1h"), LOGS.resolve("autoscaler-replace.log"));
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (autoscaler != null) {
            autoscaler.close();
        }
    }

    /** A revision as Knative's revision reconciler makes it: a Deployment at zero and its PodAutoscaler. */
    static void revision(String name, Map<String, String> annotations) {
        client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata().withName(name + "-deployment")
                .endMetadata().withNewSpec().withReplicas(0).withNewSelector().addToMatchLabels("app", name).endSelector()
                .withNewTemplate().withNewMetadata().addToLabels("app", name).endMetadata().withNewSpec().addNewContainer()
                .withName("user").withImage("fn").endContainer().endSpec().endTemplate().endSpec().build()).create();
        GenericKubernetesResource pa = new GenericKubernetesResourceBuilder().withApiVersion(KnativeNames.PODAUTOSCALER_API_VERSION)
                .withKind(KnativeNames.PODAUTOSCALER_KIND).withNewMetadata().withName(name).withNamespace(NS).withAnnotations(annotations)
                .withLabels(Map.of(KnativeNames.REVISION_LABEL, name)).endMetadata()
                .addToAdditionalProperties("spec", Map.of("protocolType", "http1", "scaleTargetRef",
                        Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", name + "-deployment"))).build();
        client.genericKubernetesResources(AutoscalerIT.PA).inNamespace(NS).resource(pa).create();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> status(String name) {
        GenericKubernetesResource pa = client.genericKubernetesResources(AutoscalerIT.PA).inNamespace(NS).withName(name).get();
        Object s = pa.getAdditionalProperties().get("status");
        return s instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    static int desiredScale(String name) {
        Object d = status(name).get("desiredScale");
        return d instanceof Number n ? n.intValue() : -1;
    }

    static int replicas(String name) {
        return client.apps().deployments().inNamespace(NS).withName(name + "-deployment").get().getSpec().getReplicas();
    }

    static ByteBuffer frame(byte[]... messages) {
        return PlayedActivator.frame(messages);
    }

    static byte[] wireStat(String namespace, String revision, String activatorPod, double concurrency, double requests) {
        return PlayedActivator.wireStat(namespace, revision, activatorPod, concurrency, requests);
    }

    /**
     * Connects as Knative's activator does, from its pod's address, retrying while the autoscaler starts or has not won
     * its Lease (503).
     */
    static PlayedActivator activator(String from) {
        PlayedActivator[] socket = new PlayedActivator[1];
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).until(() -> {
            try {
                socket[0] = PlayedActivator.connect(statsPort, from);
                return true;
            } catch (Exception e) {
                return false;
            }
        });
        return socket[0];
    }

    /** The status code of a refused upgrade from {@code from}, once the autoscaler leads (it answers 503 until then). */
    static int refusedUpgrade(String from) {
        int[] code = new int[1];
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).until(() -> {
            try {
                PlayedActivator.connect(statsPort, from).close();
                code[0] = 101;
            } catch (ExecutionException e) {
                code[0] = e.getCause() instanceof WebSocketHandshakeException h ? h.getResponse().statusCode() : -1;
            } catch (Exception e) {
                code[0] = -1;
            }
            return code[0] != -1 && code[0] != 503;
        });
        return code[0];
    }

    @Test
    void aRevisionAtZeroWakesOnTheActivatorsFirstReportAndKnativesClassScalesAsTheKpaDocumentsIt() throws Exception {
        PlayedActivator socket = activator(ACTIVATOR_ADDRESS);
        // The first tick (on winning the Lease) settled both at zero, Proxy mode: the activator holds their requests.
        await().atMost(Duration.ofSeconds(60)).until(() -> desiredScale("sleepy") == 0 && desiredScale("kpa") == 0);
        assertThat(replicas("sleepy")).isZero();

        // The activator's first-request report for the revision: concurrency 1, one request.
        long sent = System.nanoTime();
        socket.send(frame(wireStat(NS, "sleepy", ACTIVATOR, 1, 1)));
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> desiredScale("sleepy") >= 1);
        double wokeSeconds = (System.nanoTime() - sent) / 1e9;
        System.out.printf("BENCH scale-from-zero desired_scale_after_s=%.3f tick=1h%n", wokeSeconds);
        assertThat(wokeSeconds).as("desiredScale >= 1 within 2 s of the first reported request").isLessThanOrEqualTo(2.0);
        assertThat(replicas("sleepy")).isEqualTo(1);

        socket.send(frame(wireStat(NS, "kpa", ACTIVATOR, 35, 35)));
        await().atMost(Duration.ofSeconds(30)).until(() -> desiredScale("kpa") == 5);
        assertThat(replicas("kpa")).isEqualTo(5);
        socket.closeNormally();
    }

    @Test
    void onlyARunningActivatorPodOfKnativesNamespaceIsHeardAndOnlyForItself() throws Exception {
        // Not an activator's address: 403 before the upgrade, whatever it would have sent.
        assertThat(refusedUpgrade("127.0.0.31")).isEqualTo(403);
        // A tenant's pod labelled as Knative labels its activator, in the tenant's namespace: not an activator.
        PlayedActivator.register(client, NS, "activator-fake", "127.0.0.32", PlayedActivator.LABELS);
        assertThat(refusedUpgrade("127.0.0.32")).isEqualTo(403);
        await().atMost(Duration.ofSeconds(60)).until(() -> desiredScale("victim") == 0); // the first tick settled it

        // The activator speaks for itself only: a stat naming another activator pod is refused whole.
        PlayedActivator real = activator(ACTIVATOR_ADDRESS);
        real.send(frame(wireStat(NS, "victim", "activator-other", 500, 500)));
        Thread.sleep(3_000);
        assertThat(desiredScale("victim")).as("not woken by a stat for another pod").isZero();
        assertThat(real.ended).isNotDone();
        real.closeNormally();

        // An activator pod that goes is no longer heard: its open websocket is closed at its next frame.
        PlayedActivator.register(client, KnativeNames.SERVING_NAMESPACE, "activator-7d9f-k8s2q", "127.0.0.33", PlayedActivator.LABELS);
        PlayedActivator leaving = activator("127.0.0.33");
        client.pods().inNamespace(KnativeNames.SERVING_NAMESPACE).withName("activator-7d9f-k8s2q").withGracePeriod(0).delete();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            leaving.sendNow(frame(wireStat(NS, "victim", "activator-7d9f-k8s2q", 0, 0)));
            return leaving.ended.isDone();
        });
        assertThat(leaving.ended.get()).isEqualTo(1008);
        assertThat(desiredScale("victim")).isZero();
        assertThat(refusedUpgrade("127.0.0.33")).isEqualTo(403);
    }
}
