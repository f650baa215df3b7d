package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.DocumentedMetrics;
import io.dilu.testing.MetricsPage;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The autoscaler as deployed (its own process) against a real kube-apiserver with Knative's PodAutoscaler and
 * ServerlessService CRDs. The test plays Knative's revision reconciler (PA and Deployment), the ReplicaSet
 * controller (pods follow the Deployment's replicas) and the queue-proxies: one HTTP server per pod on its own
 * loopback address, answering Knative's Stat in protobuf, encoded here by hand from the wire format.
 */
class AutoscalerIT {

    static final String NS = "fns";
    static final String REVISION = "resnet-00001";
    static final Path LOGS = TestApiServer.LOGS;
    static final ResourceDefinitionContext PA = new ResourceDefinitionContext.Builder()
            .withGroup(KnativeNames.PODAUTOSCALER_GROUP).withVersion(KnativeNames.INTERNAL_VERSION).withKind(KnativeNames.PODAUTOSCALER_KIND)
            .withPlural("podautoscalers").withNamespaced(true).build();
    static final ResourceDefinitionContext SKS = new ResourceDefinitionContext.Builder()
            .withGroup(KnativeNames.SERVERLESSSERVICE_GROUP).withVersion(KnativeNames.INTERNAL_VERSION).withKind(KnativeNames.SERVERLESSSERVICE_KIND)
            .withPlural("serverlessservices").withNamespaced(true).build();

    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS, "dilu-system");
    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess autoscaler;
    /** A second replica: leader election must keep it from scaling too. */
    static ChildProcess standby;
    static int metricsPort;
    static int standbyMetricsPort;
    static int queueProxyPort;
    /** The revision's total request rate, shared by its pods. */
    static volatile double load;
    static volatile boolean garbage;
    static final Map<Integer, HttpServer> queueProxies = new ConcurrentHashMap<>();
    static final AtomicInteger mostReplicas = new AtomicInteger();
    static final ScheduledExecutorService replicaSet = Executors.newSingleThreadScheduledExecutor();

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        api = API.api();
        client = API.client();
        KnativeCrds.install(api);
        queueProxyPort = freePort();
        metricsPort = freePort();
        autoscaler = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG", api.writeKubeconfig(tmp.resolve("kubeconfig")).toString(),
                "QUARKUS_HTTP_PORT", Integer.toString(metricsPort),
                "DILU_AUTOSCALER_QUEUE_PROXY_PORT", Integer.toString(queueProxyPort)), LOGS.resolve("autoscaler.log"));
        standbyMetricsPort = freePort();
        standby = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG", tmp.resolve("kubeconfig").toString(),
                "QUARKUS_HTTP_PORT", Integer.toString(standbyMetricsPort),
                "DILU_AUTOSCALER_QUEUE_PROXY_PORT", Integer.toString(queueProxyPort)), LOGS.resolve("autoscaler-standby.log"));
        replicaSet.scheduleWithFixedDelay(AutoscalerIT::followReplicas, 0, 200, TimeUnit.MILLISECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        replicaSet.shutdownNow();
        queueProxies.values().forEach(s -> s.stop(0));
        if (autoscaler != null) {
            autoscaler.close();
        }
        if (standby != null) {
            standby.close();
        }
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Knative's Stat message as queue-proxy writes it: field 1 string, 4 and 5 doubles (wire type 1). */
    static byte[] stat(String pod, double requests, double proxied) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] name = pod.getBytes(StandardCharsets.UTF_8);
        out.write(1 << 3 | 2);
        out.write(name.length);
        out.writeBytes(name);
        for (int field : new int[] {4, 5}) {
            out.write(field << 3 | 1);
            out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN)
                    .putDouble(field == 4 ? requests : proxied).array());
        }
        return out.toByteArray();
    }

    /** The ReplicaSet controller and the queue-proxies: pods (and their servers) follow the Deployment's replicas. */
    static void followReplicas() {
        try {
            var d = client.apps().deployments().inNamespace(NS).withName(REVISION + "-deployment").get();
            if (d == null) {
                return;
            }
            int want = d.getSpec().getReplicas() == null ? 0 : d.getSpec().getReplicas();
            mostReplicas.accumulateAndGet(want, Math::max);
            for (int i = 0; i < want; i++) {
                if (!queueProxies.containsKey(i)) {
                    startPod(i);
                }
            }
            for (int i : List.copyOf(queueProxies.keySet())) {
                if (i >= want) {
                    queueProxies.remove(i).stop(0);
                    client.pods().inNamespace(NS).withName(REVISION + "-" + i).delete();
                }
            }
        } catch (Exception e) {
            // the next round tries again, as a controller would
        }
    }

    static void startPod(int i) throws Exception {
        String ip = "127.0.0." + (10 + i);
        String name = REVISION + "-" + i;
        HttpServer server = HttpServer.create(new InetSocketAddress(ip, queueProxyPort), 0);
        server.createContext("/metrics", exchange -> {
            int pods = Math.max(1, queueProxies.size());
            byte[] body = garbage && i == 0 ? "# TYPE not protobuf\nrequest_count 7\n".getBytes(StandardCharsets.UTF_8)
                    : stat(name, load / pods + 0.5, 0.5);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        Pod pod = client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name)
                .withLabels(Map.of(KnativeNames.REVISION_LABEL, REVISION)).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewContainer().withName("user-container").withImage("resnet")
                .endContainer().endSpec().build()).create();
        pod.setStatus(new PodStatusBuilder().withPhase("Running").withPodIP(ip).addNewCondition().withType("Ready")
                .withStatus("True").endCondition().build());
        client.pods().inNamespace(NS).resource(pod).updateStatus();
        queueProxies.put(i, server);
    }

    static int replicas() {
        return client.apps().deployments().inNamespace(NS).withName(REVISION + "-deployment").get().getSpec().getReplicas();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> status(String pa) {
        Object s = client.genericKubernetesResources(PA).inNamespace(NS).withName(pa).get().getAdditionalProperties().get("status");
        return s instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    @SuppressWarnings("unchecked")
    static String condition(Map<String, Object> status, String type) {
        return ((List<Map<String, Object>>) status.getOrDefault("conditions", List.of())).stream()
                .filter(c -> type.equals(c.get("type"))).map(c -> String.valueOf(c.get("status"))).findFirst().orElse("absent");
    }

    static GenericKubernetesResource podAutoscaler(String name, String paClass) {
        return new GenericKubernetesResourceBuilder().withApiVersion(KnativeNames.PODAUTOSCALER_API_VERSION)
                .withKind(KnativeNames.PODAUTOSCALER_KIND).withNewMetadata().withName(name).withNamespace(NS)
                .withAnnotations(Map.of(KnativeNames.CLASS, paClass, DiluNames.SERVING_RPS, "10"))
                .endMetadata().addToAdditionalProperties("spec", Map.of("protocolType", "http1", "scaleTargetRef",
                        Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", name + "-deployment"))).build();
    }

    static void holdFor(Duration d, Runnable check) throws InterruptedException {
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            check.run();
            Thread.sleep(500);
        }
    }

    @Test
    void claimsItsClassScalesOutOnSustainedLoadNotOnABurstAndBackInWhenLoadDrops() throws Exception {
        client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata()
                .withName(REVISION + "-deployment").endMetadata().withNewSpec().withReplicas(0).withNewSelector()
                .addToMatchLabels(KnativeNames.REVISION_LABEL, REVISION).endSelector().withNewTemplate().withNewMetadata()
                .addToLabels(KnativeNames.REVISION_LABEL, REVISION).endMetadata().withNewSpec().addNewContainer()
                .withName("user-container").withImage("resnet").endContainer().endSpec().endTemplate().endSpec().build()).create();
        client.genericKubernetesResources(PA).inNamespace(NS).resource(podAutoscaler(REVISION, DiluNames.AUTOSCALER_CLASS)).create();
        client.genericKubernetesResources(PA).inNamespace(NS).resource(podAutoscaler("other-00001", KnativeNames.KPA_CLASS)).create();

        // Claimed: the SKS is created and owned, the revision starts at its initial scale, status is written.
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
            assertThat(autoscaler.alive()).as(autoscaler.output()).isTrue();
            GenericKubernetesResource sks = client.genericKubernetesResources(SKS).inNamespace(NS).withName(REVISION).get();
            assertThat(sks).isNotNull();
            assertThat(sks.getMetadata().getOwnerReferences()).singleElement().satisfies(o -> {
                assertThat(o.getKind()).isEqualTo(KnativeNames.PODAUTOSCALER_KIND);
                assertThat(o.getController()).isTrue();
            });
            assertThat(((Map<?, ?>) sks.getAdditionalProperties().get("spec")).get("mode")).isEqualTo("Serve");
            Map<String, Object> s = status(REVISION);
            assertThat(s).containsEntry("desiredScale", 1).containsEntry("actualScale", 1)
                    .containsEntry("serviceName", REVISION).containsEntry("metricsServiceName", REVISION + "-private")
                    .containsEntry("observedGeneration", 1);
            assertThat(condition(s, "Active")).isEqualTo("True");
            assertThat(condition(s, "ScaleTargetInitialized")).isEqualTo("True");
            assertThat(condition(s, "SKSReady")).isEqualTo("Unknown");
        });
        // Not ours: untouched.
        assertThat(client.genericKubernetesResources(SKS).inNamespace(NS).withName("other-00001").get()).isNull();
        assertThat(status("other-00001")).isEmpty();

        // The networking controller marks the SKS ready: Ready follows.
        GenericKubernetesResource sks = client.genericKubernetesResources(SKS).inNamespace(NS).withName(REVISION).get();
        sks.getAdditionalProperties().put("status", Map.of("conditions", List.of(Map.of("type", "Ready", "status", "True"))));
        client.genericKubernetesResources(SKS).inNamespace(NS).resource(sks).updateStatus();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(condition(status(REVISION), "Ready")).isEqualTo("True"));

        // A 10-second burst on a light load is left to vertical scaling.
        load = 5;
        holdFor(Duration.ofSeconds(5), () -> { });
        load = 40;
        holdFor(Duration.ofSeconds(10), () -> { });
        load = 5;
        holdFor(Duration.ofSeconds(12), () -> assertThat(replicas()).as("no scale-out for a burst").isEqualTo(1));
        assertThat(mostReplicas.get()).isEqualTo(1);

        // A sustained load of 25 rps at 10 rps per instance: three instances, after 20 samples.
        load = 25;
        long rise = System.nanoTime();
        await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(250)).until(() -> replicas() == 3);
        // Lazily: 20 samples above capacity, of which the burst's 10 may still be in the 40-second window.
        assertThat((System.nanoTime() - rise) / 1e9).as("not at the first samples").isGreaterThan(8);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(status(REVISION)).containsEntry("desiredScale", 3)
                .containsEntry("actualScale", 3));
        // What operators watch: the leader's desired and ready pods per revision, and its scale decisions.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            String metrics = metrics(metricsPort) + metrics(standbyMetricsPort); // whichever leads
            assertThat(sample(metrics, "dilu_autoscaler_desired_pods{", "revision=\"" + REVISION + "\"")).isEqualTo(3);
            assertThat(sample(metrics, "dilu_autoscaler_ready_pods{", "revision=\"" + REVISION + "\"")).isEqualTo(3);
            assertThat(sample(metrics, "dilu_autoscaler_requests_per_second{", "revision=\"" + REVISION + "\""))
                    .as("the revision's rate as the queue-proxies report it").isCloseTo(load, org.assertj.core.data.Offset.offset(0.01));
            assertThat(sample(metrics, "dilu_autoscaler_scale_decisions_total{", "direction=\"up\"")).isGreaterThanOrEqualTo(1);
        });
        // docs/autoscaler.md lists what the leader exports: every name, type and label set, and no other.
        String leader = metrics(metricsPort).contains("dilu_autoscaler_desired_pods{") ? metrics(metricsPort)
                : metrics(standbyMetricsPort);
        assertThat(DocumentedMetrics.differences(DocumentedMetrics.of(DocumentedMetrics.doc("autoscaler.md")), leader,
                "dilu_autoscaler_")).isEmpty();

        // A queue-proxy answering garbage is skipped and counted; the scale does not move.
        double failuresBefore = scrapeFailures();
        garbage = true;
        holdFor(Duration.ofSeconds(5), () -> assertThat(replicas()).isEqualTo(3));
        garbage = false;
        assertThat(scrapeFailures()).isGreaterThan(failuresBefore);
        assertThat(autoscaler.alive() && standby.alive()).isTrue();

        // The load drops: back to one instance once more than 30 samples are below what two serve.
        load = 5;
        long drop = System.nanoTime();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250)).until(() -> replicas() == 1);
        assertThat((System.nanoTime() - drop) / 1e9).as("lazily: not before 30 samples").isGreaterThan(25);

        // Two replicas ran all along; exactly one led, and only the leader scaled.
        List<String> logs = List.of(autoscaler.output(), standby.output());
        assertThat(logs.stream().filter(l -> l.contains("leading: reconciling"))).hasSize(1);
        assertThat(logs.stream().filter(l -> l.contains(" instances ("))).hasSize(1);
        assertThat(standby.alive()).isTrue();
    }

    static String metrics(int port) throws Exception {
        return MetricsPage.read(URI.create("http://127.0.0.1:" + port + "/q/metrics"), Duration.ofSeconds(10));
    }

    /** The sum of the samples of {@code name} whose labels contain {@code label}; fails when there is none. */
    static double sample(String metrics, String name, String label) {
        List<Double> values = metrics.lines().filter(l -> l.startsWith(name) && l.contains(label))
                .map(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).toList();
        assertThat(values).as("samples of %s with %s in%n%s", name, label, metrics).isNotEmpty();
        return values.stream().mapToDouble(Double::doubleValue).sum();
    }

    /** Scrape failures counted by both replicas (whichever leads does the scraping). */
    static double scrapeFailures() throws Exception {
        double sum = 0;
        for (int port : new int[] {metricsPort, standbyMetricsPort}) {
            String metrics = MetricsPage.read(URI.create("http://127.0.0.1:" + port + "/q/metrics"), Duration.ofSeconds(10));
            sum += metrics.lines().filter(l -> l.startsWith("dilu_autoscaler_scrape_failures_total"))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
        }
        return sum;
    }
}
