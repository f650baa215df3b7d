package io.dilu.e2e;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.e2e.chart.DiluChart;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SelfSignedCert;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeStatusBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfig;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Dilu's control plane on this machine, for the demo and the integration tests: GPU nodes as the node agent
 * publishes them, the extender behind a real kube-scheduler configured from the shipped manifests, and the
 * webhook over HTTPS registered from them. Each component runs as its own process.
 */
public final class LocalControlPlane {

    private LocalControlPlane() {}

    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * A node as its kubelet and Dilu node agent leave it: the agent's {@code dilu.io/gpu-sm} IDs allocatable, the GPU
     * inventory, no taints.
     */
    public static void createGpuNode(KubernetesClient client, String name, List<GpuDevice> gpus) {
        Map<String, Quantity> resources = Map.of("cpu", new Quantity("64"), "memory", new Quantity("256Gi"),
                "pods", new Quantity("250"), DiluNames.GPU_SM,
                new Quantity(Integer.toString(DiluNames.GPU_SM_IDS_PER_GPU * gpus.size())));
        Node node = client.nodes().resource(new NodeBuilder().withNewMetadata().withName(name)
                .withAnnotations(Map.of(DiluNames.GPU_INVENTORY, InventoryAnnotation.write(gpus))).endMetadata()
                .build()).create();
        node.setStatus(new NodeStatusBuilder().withCapacity(resources).withAllocatable(resources)
                .addNewCondition().withType("Ready").withStatus("True").endCondition().build());
        client.nodes().resource(node).updateStatus();
        // The API server taints a new Node not-ready until its kubelet says otherwise; there is no kubelet here.
        client.nodes().withName(name).edit(n -> {
            n.getSpec().setTaints(List.of());
            return n;
        });
    }

    /** Waits until the process answers 200 on {@code url}, or fails with its output. */
    public static void awaitHttp(ChildProcess process, String url, HttpClient http) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.alive()) {
                throw new IllegalStateException("the process exited: " + process.output());
            }
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.discarding())
                        .statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("not ready within 90 s: " + process.output());
    }

    /**
     * The extender with its API on 127.0.0.1:{@code port}, ready (its informers synced). Readiness is on its
     * management interface, a free port of its own.
     */
    public static ChildProcess startExtender(Path kubeconfig, int port, Path log) throws Exception {
        int management = freePort();
        ChildProcess extender = ChildProcess.quarkusApp("scheduler-extender", Map.of("KUBECONFIG", kubeconfig.toString(),
                "QUARKUS_HTTP_PORT", Integer.toString(port), "QUARKUS_MANAGEMENT_PORT", Integer.toString(management)), log);
        awaitHttp(extender, "http://127.0.0.1:" + management + "/q/health/ready", HttpClient.newHttpClient());
        return extender;
    }

    /**
     * kube-scheduler with the dilu-scheduler configuration the chart ships for this API server's release, pointed at
     * this API server and extender. With --secure-port=0 it serves neither health nor metrics, so it takes no port.
     */
    public static ChildProcess startScheduler(KubernetesClient client, Path kubeconfig, int extenderPort, Path dir, Path log)
            throws Exception {
        String config = DiluChart.schedulerConfig(RealApiServer.VERSION)
                .replace("http://127.0.0.1:8082", "http://127.0.0.1:" + extenderPort)
                .replace("leaderElect: true", "leaderElect: false");
        Path file = Files.writeString(dir.resolve("scheduler-config.yaml"), "clientConnection:\n  kubeconfig: " + kubeconfig
                + "\n" + config);
        return ChildProcess.start(List.of(RealApiServer.kubeScheduler().toString(), "--config=" + file,
                "--secure-port=0", "--v=2"), Map.of(), log);
    }

    /** The webhook over HTTPS with a fresh certificate, registered from the shipped configurations by URL. */
    public static ChildProcess startWebhook(KubernetesClient client, Path kubeconfig, Path dir, Path log) throws Exception {
        return startWebhook(client, kubeconfig, dir, log, Map.of());
    }

    /**
     * The webhook as {@link #startWebhook(KubernetesClient, Path, Path, Path)} with more configuration (environment
     * variables). Admission is on HTTPS only; readiness is on its plain-HTTP management interface.
     */
    public static ChildProcess startWebhook(KubernetesClient client, Path kubeconfig, Path dir, Path log, Map<String, String> config)
            throws Exception {
        SelfSignedCert cert = SelfSignedCert.create(dir);
        int management = freePort();
        int https = freePort();
        Map<String, String> env = new java.util.HashMap<>(config);
        env.putAll(Map.of("KUBECONFIG", kubeconfig.toString(),
                "QUARKUS_MANAGEMENT_PORT", Integer.toString(management), "QUARKUS_HTTP_SSL_PORT", Integer.toString(https),
                "DILU_WEBHOOK_TLS_CERT", cert.cert().toString(), "DILU_WEBHOOK_TLS_KEY", cert.key().toString()));
        ChildProcess webhook = ChildProcess.quarkusApp("webhook", env, log);
        awaitHttp(webhook, "http://127.0.0.1:" + management + "/q/health/ready", HttpClient.newHttpClient());
        List<HasMetadata> objects;
        try (InputStream in = Files.newInputStream(RealApiServer.manifests().resolve("webhook/webhooks.yaml"))) {
            objects = client.load(in).items();
        }
        String ca = cert.caBundle();
        for (HasMetadata o : objects) {
            if (o instanceof MutatingWebhookConfiguration m) {
                m.getWebhooks().forEach(w -> w.setClientConfig(byUrl(w.getClientConfig(), ca, https)));
            } else if (o instanceof ValidatingWebhookConfiguration v) {
                v.getWebhooks().forEach(w -> w.setClientConfig(byUrl(w.getClientConfig(), ca, https)));
            }
            client.resource(o).create();
        }
        return webhook;
    }

    /**
     * The user this API server's admin credentials authenticate as (the CN of their client certificate): the
     * extender and kube-scheduler here run with them, where a cluster runs them as the dilu-scheduler ServiceAccount.
     */
    public static String adminUser(KubernetesClient client) throws Exception {
        var config = client.getConfiguration();
        byte[] pem = config.getClientCertData() != null ? java.util.Base64.getDecoder().decode(config.getClientCertData())
                : Files.readAllBytes(Path.of(config.getClientCertFile()));
        var cert = (java.security.cert.X509Certificate) java.security.cert.CertificateFactory.getInstance("X.509")
                .generateCertificate(new java.io.ByteArrayInputStream(pem));
        return new javax.naming.ldap.LdapName(cert.getSubjectX500Principal().getName()).getRdns().stream()
                .filter(r -> r.getType().equalsIgnoreCase("CN")).map(r -> r.getValue().toString()).findFirst().orElseThrow();
    }

    static WebhookClientConfig byUrl(WebhookClientConfig shipped, String caBundle, int port) {
        if (!"dilu-webhook".equals(shipped.getService().getName())) {
            throw new IllegalStateException("webhooks.yaml no longer points at the dilu-webhook Service");
        }
        return new WebhookClientConfigBuilder().withCaBundle(caBundle)
                .withUrl("https://127.0.0.1:" + port + shipped.getService().getPath()).build();
    }
}
