package io.dilu.e2e.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SelfSignedCert;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvFromSourceBuilder;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Attacks a tenant can make on Dilu's control plane — through the API server (admission), by calling the webhook and
 * the scheduler extender directly, or on the autoscaler's own inputs ({@link AutoscalerAttacks}: Knative's activator's
 * websocket, the profiler) — run against the real components as their own processes on a real kube-apiserver. Each answers whether it was contained: refused with a message, answered 4xx (never 5xx), nothing
 * reserved or bound that should not be, and the component still answering. Shared by
 * {@code ControlPlaneIsolationIT} (which asserts) and {@code ControlPlaneIsolationBench} (which prints).
 */
public final class ControlPlaneAttacks implements AutoCloseable {

    /** What one attack achieved. */
    public record Outcome(String attack, boolean contained, String detail) {}

    @FunctionalInterface
    interface Attack {
        Outcome run() throws Exception;
    }

    static final String COVERED = "tenants";
    static final String NODE = "gpu-node";
    static final String DIRECT = "direct";

    private final RealApiServer api;
    private final KubernetesClient client;
    private final ChildProcess webhook;
    private final ChildProcess extender;
    private final AutoscalerAttacks autoscaler;
    private final int extenderPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final HttpClient tls;
    private final String webhookBase;

    private ControlPlaneAttacks(RealApiServer api, ChildProcess webhook, ChildProcess extender, AutoscalerAttacks autoscaler,
            int extenderPort, String webhookBase, Path work) throws Exception {
        this.api = api;
        this.client = api.client();
        this.webhook = webhook;
        this.extender = extender;
        this.autoscaler = autoscaler;
        this.extenderPort = extenderPort;
        this.webhookBase = webhookBase;
        // The webhook serves the certificate the harness made for it in the work directory; trust that one only.
        this.tls = HttpClient.newBuilder().sslContext(new SelfSignedCert(work.resolve("tls.crt"), work.resolve("tls.key"))
                .trustingContext()).connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** A real API server with the webhook (HTTPS, registered) and the extender running beside it. */
    public static ControlPlaneAttacks start(Path work) throws Exception {
        Path logs = Files.createDirectories(work.resolve("logs"));
        RealApiServer api = RealApiServer.start();
        KubernetesClient client = api.client();
        api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
        Path kubeconfig = api.writeKubeconfig(work.resolve("kubeconfig"));
        api.createNamespace(COVERED, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_ENABLED));
        api.createNamespace("uncovered", Map.of());
        // An administrator's opt-out: pods created there directly are the extender's to place, unchecked.
        api.createNamespace(DIRECT, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_DISABLED));
        LocalControlPlane.createGpuNode(client, NODE, List.of(new GpuDevice("GPU-iso-0", 0, "A100-40GB", 40_960, 108)));
        ChildProcess webhook = LocalControlPlane.startWebhook(client, kubeconfig, work, logs.resolve("webhook.log"));
        int port = LocalControlPlane.freePort();
        ChildProcess extender = LocalControlPlane.startExtender(kubeconfig, port, logs.resolve("extender.log"));
        String url = client.admissionRegistration().v1().validatingWebhookConfigurations().list().getItems().stream()
                .map(ValidatingWebhookConfiguration::getWebhooks).flatMap(List::stream)
                .map(w -> w.getClientConfig().getUrl()).findFirst().orElseThrow();
        String base = url.substring(0, url.indexOf('/', "https://".length()));
        AutoscalerAttacks autoscaler = AutoscalerAttacks.start(api, kubeconfig, logs);
        ControlPlaneAttacks attacks = new ControlPlaneAttacks(api, webhook, extender, autoscaler, port, base, work);
        attacks.awaitWebhookSeesTheCluster();
        return attacks;
    }

    @Override
    public void close() throws Exception {
        autoscaler.close();
        extender.close();
        webhook.close();
        api.close();
    }

    /** Every attack, in a stable order. */
    public List<Outcome> runAll() {
        List<Outcome> outcomes = new ArrayList<>();
        for (Map.Entry<String, Attack> a : attacks().entrySet()) {
            try {
                outcomes.add(a.getValue().run());
            } catch (Exception | AssertionError e) {
                outcomes.add(new Outcome(a.getKey(), false, "the attack's run failed: " + e));
            }
        }
        return outcomes;
    }

    Map<String, Attack> attacks() {
        Map<String, Attack> all = new LinkedHashMap<>();
        // admission, through the API server as a tenant would
        refusedAt(all, "ld-preload-env", "env[LD_PRELOAD]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("LD_PRELOAD").withValue("/tmp/mine.so").build()).endContainer().endSpec());
        refusedAt(all, "ld-preload-value-from", "env[LD_PRELOAD]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("LD_PRELOAD").withNewValueFrom().withNewConfigMapKeyRef()
                        .withName("cfg").withKey("preload").endConfigMapKeyRef().endValueFrom().build()).endContainer().endSpec());
        refusedAt(all, "dilu-env", "env[DILU_CONTROL_DIR]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("DILU_CONTROL_DIR").withValue("/tmp/mine").build()).endContainer().endSpec());
        refusedAt(all, "env-from-without-prefix", "envFrom[0]", p -> p.editSpec().editFirstContainer()
                .addToEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef().withName("cfg").endConfigMapRef().build())
                .endContainer().endSpec());
        refusedAt(all, "init-container-gpu", "spec.initContainers[0](init).resources[dilu.io/gpu-sm]", p -> p.editSpec()
                .addToInitContainers(new ContainerBuilder().withName("init").withImage("registry.local/fn:1").withNewResources()
                        .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("500"))).endResources().build()).endSpec());
        refusedAt(all, "sys-admin", "SYS_ADMIN", p -> p.editSpec().editFirstContainer().withNewSecurityContext()
                .withCapabilities(new CapabilitiesBuilder().withAdd("SYS_ADMIN").build()).endSecurityContext().endContainer().endSpec());
        all.put("host-path-agent-dir", () -> refusal("host-path-agent-dir", "hostPath.path=/var/lib/dilu",
                new PodBuilder().withNewMetadata().withName("hostpath").withNamespace(COVERED).endMetadata().withNewSpec()
                        .addNewContainer().withName("c").withImage("registry.local/tool:1").endContainer()
                        .addNewVolume().withName("data").withNewHostPath().withPath("/var/lib/dilu/containers").endHostPath()
                        .endVolume().endSpec().build()));
        refusedAt(all, "node-name", "spec.nodeName", p -> p.editSpec().withNodeName(NODE).endSpec());
        refusedAt(all, "other-scheduler", "spec.schedulerName", p -> p.editSpec().withSchedulerName("my-scheduler").endSpec());
        refusedAt(all, "slo-without-right", "dilu.io/priority=slo", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.PRIORITY, "slo")).endMetadata());
        refusedAt(all, "limit-above-default", "dilu.io/sm-limit=100", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.SM_LIMIT, "100")).endMetadata(), 1);
        refusedAt(all, "hair-trigger-threshold", "dilu.io/klc-threshold", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.KLC_THRESHOLD, "1.01")).endMetadata());
        all.put("uncovered-namespace", () -> refusal("uncovered-namespace", "metadata.namespace=uncovered",
                gpuPod("elsewhere", p -> p.editMetadata().withNamespace("uncovered").endMetadata(), 30)));
        all.put("priority-changed-by-update", this::priorityChangedByUpdate);
        all.put("webhook-6000-containers", this::sixThousandContainers);
        all.put("webhook-huge-quantity", () -> webhookReview("webhook-huge-quantity", gpuPodJson("1e999999999")));
        all.put("webhook-garbage-body", () -> webhookPost("webhook-garbage-body", "{\"request\": [[[[", 200));
        all.put("admission-over-plain-http", this::admissionOverPlainHttp);
        // the extender, called directly
        all.put("extender-other-interfaces", this::extenderOnLoopbackOnly);
        all.put("extender-null-body", () -> extenderPost("extender-null-body", "filter", "null", 400));
        all.put("extender-pod-without-uid", () -> extenderPost("extender-pod-without-uid", "filter",
                "{\"Pod\": {\"metadata\": {\"name\": \"x\", \"namespace\": \"" + COVERED + "\"}}, \"NodeNames\": [\"" + NODE + "\"]}",
                400));
        all.put("extender-made-up-pod", this::madeUpPod);
        all.put("extender-bind-foreign-pod", this::bindForeignPod);
        all.put("extender-huge-quantity", this::extenderHugeQuantity);
        // the autoscaler's own inputs
        autoscaler.addTo(all);
        return all;
    }

    // ---- admission ----

    private static Pod gpuPod(String name, UnaryOperator<PodBuilder> edit, int sm) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity("1024"));
        return edit.apply(new PodBuilder().withNewMetadata().withName(name).withNamespace(COVERED).endMetadata()
                .withNewSpec().withAutomountServiceAccountToken(false).addNewContainer().withName("server")
                .withImage("registry.local/fn:1").withNewResources().withLimits(share).withRequests(share).endResources()
                .endContainer().endSpec()).build();
    }

    private void refusedAt(Map<String, Attack> all, String name, String field, UnaryOperator<PodBuilder> edit) {
        refusedAt(all, name, field, edit, 30);
    }

    private void refusedAt(Map<String, Attack> all, String name, String field, UnaryOperator<PodBuilder> edit, int sm) {
        all.put(name, () -> refusal(name, field, gpuPod(name, edit, sm)));
    }

    /** Contained when the API server refuses the pod with the webhook's message naming the field (a 4xx). */
    private Outcome refusal(String name, String field, Pod pod) {
        String ns = pod.getMetadata().getNamespace();
        try {
            client.pods().inNamespace(ns).resource(pod).create();
            client.pods().inNamespace(ns).withName(pod.getMetadata().getName()).delete();
            return new Outcome(name, false, "admitted");
        } catch (KubernetesClientException e) {
            String message = String.valueOf(e.getStatus() == null ? e.getMessage() : e.getStatus().getMessage());
            boolean contained = e.getCode() >= 400 && e.getCode() < 500 && message.contains(field);
            return new Outcome(name, contained, e.getCode() + ": " + shorten(message));
        }
    }

    private Outcome priorityChangedByUpdate() {
        Pod pod = client.pods().inNamespace(COVERED).resource(gpuPod("update-me", UnaryOperator.identity(), 30)).create();
        try {
            client.pods().inNamespace(COVERED).withName(pod.getMetadata().getName()).edit(p -> {
                p.getMetadata().getAnnotations().put(DiluNames.PRIORITY, "slo");
                return p;
            });
            return new Outcome("priority-changed-by-update", false, "the UPDATE was admitted");
        } catch (KubernetesClientException e) {
            boolean contained = e.getCode() >= 400 && e.getCode() < 500 && e.getMessage().contains("dilu.io/priority");
            return new Outcome("priority-changed-by-update", contained, e.getCode() + ": " + shorten(e.getMessage()));
        } finally {
            client.pods().inNamespace(COVERED).withName(pod.getMetadata().getName()).withGracePeriod(0).delete();
        }
    }

    private String review(String podJson) {
        return "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\","
                + "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","
                + "\"resource\":\"pods\"},\"namespace\":\"" + COVERED + "\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
                + "\"tenant\"},\"object\":" + podJson + "}}";
    }

    private static String gpuPodJson(String sm) {
        return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":\"" + COVERED + "\"},"
                + "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"dilu.io/gpu-sm\":\""
                + sm + "\"}}}]}}";
    }

    private Outcome sixThousandContainers() throws Exception {
        StringBuilder containers = new StringBuilder();
        for (int i = 0; i < 6_000; i++) {
            containers.append(i == 0 ? "" : ",").append("{\"name\":\"c").append(i)
                    .append("\",\"image\":\"i\",\"resources\":{\"limits\":{\"dilu.io/gpu-sm\":\"1\"}}}");
        }
        String pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"many\",\"namespace\":\"" + COVERED
                + "\"},\"spec\":{\"containers\":[" + containers + "]}}";
        return webhookReview("webhook-6000-containers", pod);
    }

    /** Contained when the webhook answers 200 with an AdmissionReview that denies, and still answers afterwards. */
    private Outcome webhookReview(String name, String podJson) throws Exception {
        Outcome o = webhookPost(name, review(podJson), 200);
        return new Outcome(name, o.contained() && o.detail().contains("\"allowed\":false"), o.detail());
    }

    private Outcome webhookPost(String name, String body, int expected) throws Exception {
        HttpResponse<String> r = tls.send(HttpRequest.newBuilder(URI.create(webhookBase + "/validate"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        boolean alive = tls.send(HttpRequest.newBuilder(URI.create(webhookBase + "/validate"))
                .POST(HttpRequest.BodyPublishers.ofString(review(gpuPodJson("30")))).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        return new Outcome(name, r.statusCode() == expected && alive && webhook.alive(),
                r.statusCode() + ": " + shorten(r.body().replace(" ", "")) + (alive ? "" : " (then no longer answering)"));
    }

    private Outcome admissionOverPlainHttp() throws Exception {
        String plain = webhookBase.replace("https://", "http://");
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(plain + "/validate"))
                    .POST(HttpRequest.BodyPublishers.ofString(review(gpuPodJson("30")))).header("Content-Type", "application/json")
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            return new Outcome("admission-over-plain-http", !r.body().contains("AdmissionReview"),
                    "plain HTTP to the HTTPS port answered " + r.statusCode());
        } catch (java.io.IOException e) {
            return new Outcome("admission-over-plain-http", true, "plain HTTP to the HTTPS port: " + e.getClass().getSimpleName());
        }
    }

    private void awaitWebhookSeesTheCluster() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            Outcome o = refusal("probe", "dilu.io/priority=slo", gpuPod("probe", p -> p.editMetadata()
                    .withAnnotations(Map.of(DiluNames.PRIORITY, "slo")).endMetadata(), 30));
            if (o.contained()) {
                return;
            }
            Thread.sleep(200);
        }
    }

    // ---- the extender ----

    /** Its API socket listens on 127.0.0.1 only: nothing outside kube-scheduler's pod can reach it. */
    private Outcome extenderOnLoopbackOnly() throws Exception {
        List<String> listeners = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            for (String line : Files.readAllLines(Path.of(table), StandardCharsets.US_ASCII)) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 3 && f[3].equals("0A") && f[1].endsWith(String.format(Locale.ROOT, ":%04X", extenderPort))) {
                    listeners.add(f[1]);
                }
            }
        }
        // 127.0.0.1, ::1 and ::ffff:127.0.0.1 as /proc/net spells them (little-endian words)
        boolean loopback = !listeners.isEmpty() && listeners.stream().allMatch(a -> a.startsWith("0100007F:")
                || a.startsWith("00000000000000000000000001000000:") || a.startsWith("0000000000000000FFFF00000100007F:"));
        return new Outcome("extender-other-interfaces", loopback, "listening on " + listeners + " (hex, /proc/net)");
    }

    private Outcome extenderPost(String name, String verb, String body, int expected) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort + "/" + verb))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        return new Outcome(name, r.statusCode() == expected && extender.alive(), r.statusCode() + ": " + shorten(r.body()));
    }

    private static String filterArgs(Pod pod) {
        return "{\"Pod\":" + io.fabric8.kubernetes.client.utils.Serialization.asJson(pod) + ",\"NodeNames\":[\"" + NODE + "\"]}";
    }

    /** A pod that does not exist asks for the whole GPU: nothing is reserved, a real pod still fits. */
    private Outcome madeUpPod() throws Exception {
        Pod ghost = gpuPod("ghost", UnaryOperator.identity(), 100);
        ghost.getMetadata().setUid("00000000-0000-0000-0000-000000000001");
        Outcome refused = extenderPost("extender-made-up-pod", "filter", filterArgs(ghost), 200);
        Pod real = createPending("after-ghost", 100);
        Outcome fits = extenderPost("extender-made-up-pod", "filter", filterArgs(real), 200);
        boolean contained = refused.detail().contains("\"Error\"") && fits.detail().contains(NODE)
                && !fits.detail().contains("\"Error\"");
        delete(real);
        return new Outcome("extender-made-up-pod", contained, "made-up pod: " + refused.detail() + "; a real 100% pod then: "
                + fits.detail());
    }

    /** Bind with a victim's UID under another pod's name: refused, and the victim's reservation holds. */
    private Outcome bindForeignPod() throws Exception {
        Pod victim = createPending("victim", 50);
        extenderPost("extender-bind-foreign-pod", "filter", filterArgs(victim), 200);
        String uid = victim.getMetadata().getUid();
        String ns = victim.getMetadata().getNamespace();
        Outcome foreign = extenderPost("extender-bind-foreign-pod", "bind", "{\"PodName\":\"attacker\",\"PodNamespace\":\""
                + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + NODE + "\"}", 200);
        Outcome own = extenderPost("extender-bind-foreign-pod", "bind", "{\"PodName\":\"victim\",\"PodNamespace\":\""
                + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + NODE + "\"}", 200);
        boolean bound = NODE.equals(client.pods().inNamespace(ns).withName("victim").get().getSpec().getNodeName());
        delete(victim);
        return new Outcome("extender-bind-foreign-pod", foreign.detail().contains("\"Error\"") && bound,
                "foreign bind: " + foreign.detail() + "; the victim's own: " + own.detail() + ", bound " + bound);
    }

    /** A body claiming 4294967346 percent for a pod: refused on its real quantity, nothing reserved. */
    private Outcome extenderHugeQuantity() throws Exception {
        Pod real = createPending("huge", 30);
        Pod claimed = new PodBuilder(real).editSpec().editFirstContainer().editResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity("4294967346")).endResources().endContainer().endSpec().build();
        // Pods deleted by the attacks before may still hold the GPU in the extender's view for a moment.
        Outcome o = extenderPost("extender-huge-quantity", "filter", filterArgs(claimed), 200);
        for (long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                o.detail().contains("FailedNodes\":{\"" + NODE) && System.nanoTime() < deadline; sleep(200)) {
            o = extenderPost("extender-huge-quantity", "filter", filterArgs(claimed), 200);
        }
        delete(real);
        return new Outcome("extender-huge-quantity", o.contained() && o.detail().contains("\"NodeNames\":[\"" + NODE),
                "placed on its real quantity (30%): " + o.detail());
    }

    /** A pending Dilu pod in a namespace the webhook is kept away from, created directly: the extender's to place. */
    private Pod createPending(String name, int sm) {
        Pod pod = gpuPod(name, p -> p.editMetadata().withNamespace(DIRECT).endMetadata()
                .editSpec().withSchedulerName("nobody-schedules-this").endSpec(), sm);
        Pod created = client.pods().inNamespace(DIRECT).resource(pod).create();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) { // the extender's watch must know it
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort + "/prioritize"))
                        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(filterArgs(created)))
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    break;
                }
            } catch (Exception ignored) {
                // not answering yet; retry
            }
            sleep(100);
        }
        sleep(500);
        return created;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void delete(Pod pod) {
        client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).withGracePeriod(0)
                .delete();
    }

    private static String shorten(String s) {
        String one = s.replace('\n', ' ');
        return one.length() <= 240 ? one : one.substring(0, 240) + "…";
    }
}
