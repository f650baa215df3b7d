package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.ByteArrayOutputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The autoscaler installed to replace Knative's (its own process, {@code DILU_AUTOSCALER_MODE=replace}) against a
 * real kube-apiserver with Knative's PodAutoscaler and ServerlessService CRDs. The test plays Knative's revision
 * reconciler (PodAutoscalers and Deployments) and Knative's activator: it opens a websocket to the autoscaler
 * and reports the requests it holds in Knative's wire format ({@code WireStatMessages}, protobuf, encoded here
 * by hand from Knative's field numbers). The autoscaler ticks once an hour in this test, so a revision that
 * wakes was woken by the report itself, not by a tick.
 */
class ActivatorStatsIT {

    static final String NS = "fns";
    static final Path LOGS = Path.of("target", "it-logs");

    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess autoscaler;
    static int port;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        Files.createDirectories(LOGS);
        api = RealApiServer.start();
        client = api.client();
        KnativeCrds.install(api);
        for (String ns : List.of(NS, "dilu-system", "knative-serving")) {
            api.createNamespace(ns, Map.of());
        }
        // The revisions exist before the autoscaler starts: it lists them before it leads, and its first tick
        // (the only one within the test, the tick being an hour) settles both at zero.
        revision("sleepy", Map.of("autoscaling.knative.dev/class", "co-scaling.dilu.io",
                "autoscaling.knative.dev/initial-scale", "0", "dilu.io/serving-rps", "10"));
        // knative.dev, "Configuring targets": a concurrency target of 10 at 70% utilization is a pod per 7
        // requests in flight; 35 held by the activator ask for 5 pods.
        revision("kpa", Map.of("autoscaling.knative.dev/class", "kpa.autoscaling.knative.dev",
                "autoscaling.knative.dev/target", "10", "autoscaling.knative.dev/initial-scale", "0"));
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        autoscaler = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG",
                api.writeKubeconfig(tmp.resolve("kubeconfig")).toString(), "QUARKUS_HTTP_PORT", Integer.toString(port),
                "DILU_AUTOSCALER_MODE", "replace", "DILU_AUTOSCALER_TICK", "1h"), LOGS.resolve("autoscaler-replace.log"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (autoscaler != null) {
            autoscaler.close();
        }
        if (api != null) {
            api.close();
        }
    }

    /** A revision as Knative's revision reconciler makes it: a Deployment at zero and its PodAutoscaler. */
    static void revision(String name, Map<String, String> annotations) {
        client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata().withName(name + "-deployment")
                .endMetadata().withNewSpec().withReplicas(0).withNewSelector().addToMatchLabels("app", name).endSelector()
                .withNewTemplate().withNewMetadata().addToLabels("app", name).endMetadata().withNewSpec().addNewContainer()
                .withName("user").withImage("fn").endContainer().endSpec().endTemplate().endSpec().build()).create();
        GenericKubernetesResource pa = new GenericKubernetesResourceBuilder().withApiVersion("autoscaling.internal.knative.dev/v1alpha1")
                .withKind("PodAutoscaler").withNewMetadata().withName(name).withNamespace(NS).withAnnotations(annotations)
                .withLabels(Map.of("serving.knative.dev/revision", name)).endMetadata()
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

    /** One WireStatMessage: namespace (1), name (2) and a Stat (3) of pod_name (1), concurrency (2), requests (4). */
    static byte[] wireStat(String namespace, String revision, String activatorPod, double concurrency, double requests) {
        ByteArrayOutputStream stat = new ByteArrayOutputStream();
        field(stat, 1, activatorPod.getBytes(StandardCharsets.UTF_8));
        fixed64(stat, 2, concurrency);
        fixed64(stat, 4, requests);
        ByteArrayOutputStream message = new ByteArrayOutputStream();
        field(message, 1, namespace.getBytes(StandardCharsets.UTF_8));
        field(message, 2, revision.getBytes(StandardCharsets.UTF_8));
        field(message, 3, stat.toByteArray());
        return message.toByteArray();
    }

    /** WireStatMessages: the messages, each as field 1 (repeated). */
    static ByteBuffer frame(byte[]... messages) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] m : messages) {
            field(out, 1, m);
        }
        return ByteBuffer.wrap(out.toByteArray());
    }

    private static void field(ByteArrayOutputStream out, int number, byte[] bytes) {
        varint(out, number << 3 | 2);
        varint(out, bytes.length);
        out.writeBytes(bytes);
    }

    private static void fixed64(ByteArrayOutputStream out, int number, double value) {
        varint(out, number << 3 | 1);
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(value).array());
    }

    private static void varint(ByteArrayOutputStream out, int value) {
        while ((value & ~0x7F) != 0) {
            out.write(value & 0x7F | 0x80);
            value >>>= 7;
        }
        out.write(value);
    }

    /** Connects as Knative's activator does, retrying while the autoscaler starts or has not won its Lease (503). */
    static WebSocket activator() {
        HttpClient http = HttpClient.newHttpClient();
        WebSocket[] socket = new WebSocket[1];
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).until(() -> {
            try {
                socket[0] = http.newWebSocketBuilder().buildAsync(URI.create("ws://127.0.0.1:" + port + "/"),
                        new WebSocket.Listener() {}).get(10, TimeUnit.SECONDS);
                return true;
            } catch (Exception e) {
                return false;
            }
        });
        return socket[0];
    }

    @Test
    void aRevisionAtZeroWakesOnTheActivatorsFirstReportAndKnativesClassScalesAsTheKpaDocumentsIt() throws Exception {
        WebSocket socket = activator();
        // The first tick (on winning the Lease) settled both at zero, Proxy mode: the activator holds their requests.
        await().atMost(Duration.ofSeconds(60)).until(() -> desiredScale("sleepy") == 0 && desiredScale("kpa") == 0);
        assertThat(replicas("sleepy")).isZero();

        // The activator's first-request report for the revision: concurrency 1, one request.
        long sent = System.nanoTime();
        socket.sendBinary(frame(wireStat(NS, "sleepy", "activator-abc", 1, 1)), true).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> desiredScale("sleepy") >= 1);
        double wokeSeconds = (System.nanoTime() - sent) / 1e9;
        System.out.printf("BENCH scale-from-zero desired_scale_after_s=%.3f tick=1h%n", wokeSeconds);
        assertThat(wokeSeconds).as("desiredScale >= 1 within 2 s of the first reported request").isLessThanOrEqualTo(2.0);
        assertThat(replicas("sleepy")).isEqualTo(1);

        socket.sendBinary(frame(wireStat(NS, "kpa", "activator-abc", 35, 35)), true).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(30)).until(() -> desiredScale("kpa") == 5);
        assertThat(replicas("kpa")).isEqualTo(5);
        socket.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(10, TimeUnit.SECONDS);
    }
}
