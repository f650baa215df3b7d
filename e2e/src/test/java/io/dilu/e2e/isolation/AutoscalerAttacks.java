package io.dilu.e2e.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.e2e.KnativeCrds;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.e2e.PlayedActivator;
import io.dilu.e2e.isolation.ControlPlaneAttacks.Attack;
import io.dilu.e2e.isolation.ControlPlaneAttacks.Outcome;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Attacks on the autoscaler's own inputs, run against the autoscaler as its own process in {@code replace} mode on the
 * real API server of {@link ControlPlaneAttacks}: stat frames on Knative's activator websocket (a real websocket, from
 * a tenant pod's address or from the activator pod's), and GpuFunctionProfiles that hold the profiler. A tenant's
 * pods and Knative's activator pod are played as {@link PlayedActivator} plays them: pods the API server knows,
 * Running at a loopback address each, from which the websockets come.
 *
 * <p>Shipped settings but one: the profiler's trial timeout is 15 s (2 min shipped), so that a trial that never reports
 * is seen ended within the run. Trial pods stay Pending (no scheduler runs here): they never report.
 */
final class AutoscalerAttacks implements AutoCloseable {

    static final String VICTIMS = "victims";
    static final String ATTACKER = "attacker";
    static final String ACTIVATOR = "activator-5c8d-qx7vz";
    static final String ACTIVATOR_ADDRESS = "127.0.0.50";
    static final String TENANT_ADDRESS = "127.0.0.51";
    static final String FAKE_ACTIVATOR_ADDRESS = "127.0.0.52";
    static final Duration TRIAL_TIMEOUT = Duration.ofSeconds(15);
    /** Knative's KPA at config-autoscaler's defaults: 100 in flight per pod at 70%, so a pod per 70. */
    static final double KPA_POD = 70;
    /** The shipped ceiling of what all activators together may claim of one revision. */
    static final double MAX_REVISION_CONCURRENCY = 10_000;

    private final KubernetesClient client;
    private final ChildProcess autoscaler;
    private final int httpPort;
    private final int statsPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private AutoscalerAttacks(KubernetesClient client, ChildProcess autoscaler, int httpPort, int statsPort) {
        this.client = client;
        this.autoscaler = autoscaler;
        this.httpPort = httpPort;
        this.statsPort = statsPort;
    }

    /** Knative's CRDs, the revisions and pods the attacks need, and the autoscaler replacing Knative's. */
    static AutoscalerAttacks start(RealApiServer api, Path kubeconfig, Path logs) throws Exception {
        KubernetesClient client = api.client();
        KnativeCrds.install(api);
        for (String ns : List.of(KnativeNames.SERVING_NAMESPACE, "dilu-system", VICTIMS)) {
            namespace(api, ns, Map.of());
        }
        namespace(api, ATTACKER, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_DISABLED));
        for (String ns : List.of("greedy", "patient")) {
            namespace(api, ns, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_ENABLED, "dilu.io/allow-slo", "true"));
        }
        revision(client, "victim-dilu", Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS, DiluNames.SERVING_RPS, "10"));
        revision(client, "victim-kpa", Map.of(KnativeNames.CLASS, KnativeNames.KPA_CLASS));
        revision(client, "absurd-kpa", Map.of(KnativeNames.CLASS, KnativeNames.KPA_CLASS));
        revision(client, "flood-probe", Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS, DiluNames.SERVING_RPS, "10"));
        PlayedActivator.register(client, KnativeNames.SERVING_NAMESPACE, ACTIVATOR, ACTIVATOR_ADDRESS, PlayedActivator.LABELS);
        PlayedActivator.register(client, ATTACKER, "tenant-pod", TENANT_ADDRESS, Map.of("app", "shop"));
        // A tenant labels its own pod as Knative labels the activator: it is in the tenant's namespace still.
        PlayedActivator.register(client, ATTACKER, "activator-6b9f-fake1", FAKE_ACTIVATOR_ADDRESS, PlayedActivator.LABELS);
        int httpPort = LocalControlPlane.freePort();
        int statsPort = LocalControlPlane.freePort();
        ChildProcess autoscaler = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG", kubeconfig.toString(),
                "QUARKUS_HTTP_PORT", Integer.toString(httpPort), "DILU_AUTOSCALER_ACTIVATOR_PORT", Integer.toString(statsPort),
                "DILU_AUTOSCALER_MODE", "replace", "DILU_AUTOSCALER_PROFILER_TRIAL_TIMEOUT",
                TRIAL_TIMEOUT.toSeconds() + "s"), logs.resolve("autoscaler.log"));
        AutoscalerAttacks attacks = new AutoscalerAttacks(client, autoscaler, httpPort, statsPort);
        attacks.awaitLeading();
        return attacks;
    }

    private static void namespace(RealApiServer api, String name, Map<String, String> labels) {
        if (api.client().namespaces().withName(name).get() == null) {
            api.createNamespace(name, labels);
        }
    }

    /** A revision at zero as Knative's revision reconciler makes it: a Deployment and its PodAutoscaler. */
    private static void revision(KubernetesClient client, String name, Map<String, String> annotations) {
        Map<String, String> all = new java.util.HashMap<>(annotations);
        all.put(KnativeNames.INITIAL_SCALE, "0");
        client.apps().deployments().inNamespace(VICTIMS).resource(new DeploymentBuilder().withNewMetadata()
                .withName(name + "-deployment").endMetadata().withNewSpec().withReplicas(0).withNewSelector()
                .addToMatchLabels("app", name).endSelector().withNewTemplate().withNewMetadata().addToLabels("app", name)
                .endMetadata().withNewSpec().addNewContainer().withName("user").withImage("fn").endContainer().endSpec()
                .endTemplate().endSpec().build()).create();
        GenericKubernetesResource pa = new GenericKubernetesResourceBuilder()
                .withApiVersion(KnativeNames.PODAUTOSCALER_API_VERSION).withKind(KnativeNames.PODAUTOSCALER_KIND).withNewMetadata()
                .withName(name).withNamespace(VICTIMS).withAnnotations(all)
                .withLabels(Map.of(KnativeNames.REVISION_LABEL, name)).endMetadata()
                .addToAdditionalProperties("spec", Map.of("protocolType", "http1", "scaleTargetRef",
                        Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", name + "-deployment"))).build();
        client.genericKubernetesResources(KnativeCrds.PA).inNamespace(VICTIMS).resource(pa).create();
    }

    /** Until the real activator is let in (not 503: the autoscaler leads) and every revision was settled at zero. */
    private void awaitLeading() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (System.nanoTime() < deadline) {
            if (upgrade(ACTIVATOR_ADDRESS) == 101 && List.of("victim-dilu", "victim-kpa", "absurd-kpa", "flood-probe").stream()
                    .allMatch(r -> desiredScale(r) == 0)) {
                return;
            }
            Thread.sleep(500);
        }
        throw new IllegalStateException("the autoscaler did not lead within 120 s (see its log)");
    }

    @Override
    public void close() throws Exception {
        autoscaler.close();
    }

    void addTo(Map<String, Attack> all) {
        all.put("activator-unauthenticated-dilu-revision", () -> unauthenticated("activator-unauthenticated-dilu-revision",
                TENANT_ADDRESS, "victim-dilu"));
        all.put("activator-label-spoofed-kpa-revision", () -> unauthenticated("activator-label-spoofed-kpa-revision",
                FAKE_ACTIVATOR_ADDRESS, "victim-kpa"));
        all.put("activator-connection-slots", this::connectionSlots);
        all.put("activator-speaks-for-other-pods", this::speaksForOtherPods);
        all.put("activator-absurd-concurrency", this::absurdConcurrency);
        all.put("activator-infinite-values", this::infiniteValues);
        all.put("activator-frame-flood", this::frameFlood);
        all.put("activator-many-revisions-per-frame", this::manyRevisionsPerFrame);
        all.put("profiler-namespace-fills-slots", this::profilerNamespaceFillsSlots);
        all.put("profiler-never-reporting-trial", this::neverReportingTrial);
    }

    // ---- the activator's websocket

    /** The upgrade's status from {@code from}: 101 when let in (the connection is closed again), else the refusal's. */
    private int upgrade(String from) {
        try {
            PlayedActivator.connect(statsPort, from).close();
            return 101;
        } catch (ExecutionException e) {
            return e.getCause() instanceof WebSocketHandshakeException h ? h.getResponse().statusCode() : -1;
        } catch (Exception e) {
            return -1;
        }
    }

    /** A tenant's pod (not an activator) would report 1,000 requests held for another namespace's revision at zero. */
    private Outcome unauthenticated(String name, String from, String revision) throws Exception {
        int status = upgrade(from);
        // Had it been let in, its frame would have woken the revision within a tick.
        Thread.sleep(3_000);
        int desired = desiredScale(revision);
        return new Outcome(name, status == 403 && desired == 0, "upgrade from " + from + " answered " + status
                + "; " + VICTIMS + "/" + revision + " desiredScale " + desired + " 3 s later");
    }

    /** 200 upgrades from a tenant's pod: none takes a connection slot from the activator. */
    private Outcome connectionSlots() {
        int refused = 0;
        for (int i = 0; i < 200; i++) {
            refused += upgrade(TENANT_ADDRESS) == 403 ? 1 : 0;
        }
        int real = upgrade(ACTIVATOR_ADDRESS);
        return new Outcome("activator-connection-slots", refused == 200 && real == 101,
                refused + " of 200 upgrades from a tenant's pod answered 403; the activator's then " + real);
    }

    /** The activator's connection claims to carry 32 activators' stats, 999,999 in flight each. */
    private Outcome speaksForOtherPods() throws Exception {
        double before = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"wrong-pod\"");
        byte[][] messages = new byte[32][];
        for (int i = 0; i < 32; i++) {
            messages[i] = PlayedActivator.wireStat(VICTIMS, "victim-kpa", "activator-5c8d-x" + i, 999_999, 999_999);
        }
        try (PlayedActivator a = PlayedActivator.connect(statsPort, ACTIVATOR_ADDRESS)) {
            a.send(PlayedActivator.frame(messages));
            Thread.sleep(3_000);
        }
        double refused = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"wrong-pod\"") - before;
        int desired = desiredScale("victim-kpa");
        return new Outcome("activator-speaks-for-other-pods", refused == 1 && desired == 0, "frame refused as wrong-pod "
                + (int) refused + " time(s); " + VICTIMS + "/victim-kpa desiredScale " + desired);
    }

    /**
     * The activator itself (compromised, or wrong) claims 999,999 in flight for a KPA-class revision without max-scale:
     * below the per-stat bound, so taken, and clipped to the revision's ceiling (10,000: 143 pods at 70 a pod), not
     * Knative's 1,000-pod cap.
     */
    private Outcome absurdConcurrency() throws Exception {
        try (PlayedActivator a = PlayedActivator.connect(statsPort, ACTIVATOR_ADDRESS)) {
            for (int i = 0; i < 8; i++) {
                a.send(PlayedActivator.frame(PlayedActivator.wireStat(VICTIMS, "absurd-kpa", ACTIVATOR, 999_999, 999_999)));
                Thread.sleep(1_000);
            }
        }
        int desired = desiredScale("absurd-kpa");
        int bound = (int) Math.ceil(MAX_REVISION_CONCURRENCY / KPA_POD);
        return new Outcome("activator-absurd-concurrency", desired > 0 && desired <= bound, VICTIMS
                + "/absurd-kpa desiredScale " + desired + " after 8 s of 999,999 in flight (bound " + bound
                + ": max-revision-concurrency / 70 a pod; 1,000 before)");
    }

    /** 1e308, infinity and NaN from the activator: refused whole, nothing woken. */
    private Outcome infiniteValues() throws Exception {
        double before = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"implausible\"");
        try (PlayedActivator a = PlayedActivator.connect(statsPort, ACTIVATOR_ADDRESS)) {
            for (double v : new double[] {1e308, Double.POSITIVE_INFINITY, Double.NaN, -5}) {
                a.send(PlayedActivator.frame(PlayedActivator.wireStat(VICTIMS, "victim-kpa", ACTIVATOR, v, v)));
            }
            Thread.sleep(3_000);
        }
        double refused = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"implausible\"") - before;
        int desired = desiredScale("victim-kpa");
        return new Outcome("activator-infinite-values", refused == 4 && desired == 0,
                (int) refused + " of 4 frames refused as implausible; " + VICTIMS + "/victim-kpa desiredScale " + desired);
    }

    /**
     * 20,000 frames as fast as the socket takes them: dropped unread beyond the connection's budget (100 a second), the
     * autoscaler still answering, and the activator's next first-request report wakes a revision at once.
     */
    private Outcome frameFlood() throws Exception {
        double before = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"rate-limited\"");
        double framesBefore = metric("dilu_autoscaler_activator_frames_total", "");
        ByteBuffer idle = PlayedActivator.frame(PlayedActivator.wireStat(VICTIMS, "victim-dilu", ACTIVATOR, 0, 0));
        long start = System.nanoTime();
        int desired;
        double seconds;
        try (PlayedActivator a = PlayedActivator.connect(statsPort, ACTIVATOR_ADDRESS)) {
            for (int i = 0; i < 20_000; i++) {
                a.send(idle.duplicate()); // the JDK's websocket sends one message at a time
            }
            // The budget runs on the autoscaler's clock: until it has taken in every frame (polled, so a little later).
            while (metric("dilu_autoscaler_activator_frames_total", "") - framesBefore < 20_000
                    && System.nanoTime() - start < Duration.ofSeconds(60).toNanos()) {
                Thread.sleep(20);
            }
            seconds = (System.nanoTime() - start) / 1e9;
            Thread.sleep(1_100); // the budget refills
            a.send(PlayedActivator.frame(PlayedActivator.wireStat(VICTIMS, "flood-probe", ACTIVATOR, 1, 1)));
            long woke = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            while ((desired = desiredScale("flood-probe")) < 1 && System.nanoTime() < woke) {
                Thread.sleep(100);
            }
        }
        double dropped = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"rate-limited\"") - before;
        double allowed = 100 + 100 * seconds;
        return new Outcome("activator-frame-flood", dropped >= 20_000 - allowed && desired >= 1 && autoscaler.alive(),
                String.format("20,000 frames taken in within %.1f s: %d dropped unread (at most %.0f could pass at 100 a "
                        + "second); the next first-request report woke a revision (desiredScale %d)", seconds, (long) dropped,
                        allowed, desired));
    }

    /** 10,001 revisions in one frame (refused), then 10,000 invented ones (nothing kept of them). */
    private Outcome manyRevisionsPerFrame() throws Exception {
        double before = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"too-many\"");
        byte[][] many = new byte[10_001][];
        for (int i = 0; i < many.length; i++) {
            many[i] = PlayedActivator.wireStat("invented-" + i, "rev-" + i, ACTIVATOR, 1, 1);
        }
        try (PlayedActivator a = PlayedActivator.connect(statsPort, ACTIVATOR_ADDRESS)) {
            a.send(PlayedActivator.frame(many));
            a.send(PlayedActivator.frame(java.util.Arrays.copyOf(many, 10_000)));
            Thread.sleep(2_000);
        }
        double refused = metric("dilu_autoscaler_activator_frames_refused_total", "reason=\"too-many\"") - before;
        double kept = metric("dilu_autoscaler_activator_revisions", "");
        return new Outcome("activator-many-revisions-per-frame", refused == 1 && kept <= 4, "10,001 messages refused as "
                + "too-many " + (int) refused + " time(s); of 10,000 invented revisions, revisions kept: " + (int) kept
                + " (only those a PodAutoscaler exists for)");
    }

    // ---- the profiler

    private GpuFunctionProfile profile(String namespace, String name) {
        return client.resources(GpuFunctionProfile.class).inNamespace(namespace).resource(new GpuFunctionProfile(
                new ObjectMetaBuilder().withName(name).build(), ProfileSpec.toProfile(name, "inference", "registry.local/never:1",
                        List.of("sleep", "infinity"), 100, null), null)).create();
    }

    private List<Pod> trialPods(String namespace) {
        return client.pods().inNamespace(namespace).withLabel("dilu.io/role", "profiling-trial").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    /**
     * Namespace greedy asks for 12 profiles whose trials never report; then namespace patient asks for one. Contained
     * when greedy never runs more than one trial at a time, its profiles beyond the quota say why they wait, and
     * patient's first trial pod is made within 10 s (a scan or two; the fairness bound: the other slot is free).
     */
    private Outcome profilerNamespaceFillsSlots() throws Exception {
        for (int i = 0; i < 12; i++) {
            profile("greedy", String.format("greedy-%02d", i));
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (trialPods("greedy").isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        int greedyMost = trialPods("greedy").size();
        long asked = System.nanoTime();
        profile("patient", "patient-00");
        double waited = -1;
        for (long end = asked + Duration.ofSeconds(20).toNanos(); System.nanoTime() < end; Thread.sleep(200)) {
            greedyMost = Math.max(greedyMost, trialPods("greedy").size());
            if (!trialPods("patient").isEmpty()) {
                waited = (System.nanoTime() - asked) / 1e9;
                break;
            }
        }
        long overQuota = 0;
        for (long end = System.nanoTime() + Duration.ofSeconds(10).toNanos(); overQuota < 2 && System.nanoTime() < end;
                Thread.sleep(200)) {
            overQuota = client.resources(GpuFunctionProfile.class).inNamespace("greedy").list().getItems().stream()
                    .filter(p -> p.condition(GpuFunctionProfile.PROFILING).map(c -> "QuotaExceeded".equals(c.getReason())
                            && c.getMessage().contains("max-queued-per-namespace")).orElse(false)).count();
            greedyMost = Math.max(greedyMost, trialPods("greedy").size());
        }
        boolean contained = waited >= 0 && waited <= 10 && greedyMost == 1 && overQuota == 2;
        return new Outcome("profiler-namespace-fills-slots", contained, String.format("greedy: 12 never-reporting profiles, "
                + "at most %d trial pod(s) at once, %d over its quota of 10 with QuotaExceeded; patient's first trial pod "
                + "%s", greedyMost, overQuota, waited < 0 ? "not made within 20 s" : String.format("made %.1f s after it asked", waited)));
    }

    /** Greedy's trial that never reports is ended (its pod deleted) at the trial timeout, and the next attempt made. */
    private Outcome neverReportingTrial() throws Exception {
        Pod first = trialPods("greedy").stream().findFirst().orElse(null);
        if (first == null) {
            return new Outcome("profiler-never-reporting-trial", false, "greedy has no trial pod to watch");
        }
        String name = first.getMetadata().getName();
        java.time.Instant created = java.time.Instant.parse(first.getMetadata().getCreationTimestamp());
        java.time.Instant gone = null;
        for (long end = System.nanoTime() + TRIAL_TIMEOUT.plusSeconds(30).toNanos(); System.nanoTime() < end; Thread.sleep(250)) {
            Pod p = client.pods().inNamespace("greedy").withName(name).get();
            if (p == null || p.getMetadata().getDeletionTimestamp() != null) {
                gone = java.time.Instant.now();
                break;
            }
        }
        if (gone == null) {
            return new Outcome("profiler-never-reporting-trial", false, name + " still there " + TRIAL_TIMEOUT.plusSeconds(30)
                    .toSeconds() + " s on");
        }
        // Seconds in the API server's timestamps: a second's slack each way.
        double held = Duration.between(created, gone).toMillis() / 1000.0;
        boolean contained = held <= TRIAL_TIMEOUT.toSeconds() + 6;
        return new Outcome("profiler-never-reporting-trial", contained, String.format("%s (Pending, never reporting) "
                + "ended %.1f s after it was made (trial timeout %d s; 2 min shipped)", name, held, TRIAL_TIMEOUT.toSeconds()));
    }

    // ---- reading the autoscaler

    @SuppressWarnings("unchecked")
    private int desiredScale(String revision) {
        try {
            GenericKubernetesResource pa = client.genericKubernetesResources(KnativeCrds.PA).inNamespace(VICTIMS)
                    .withName(revision).get();
            Object status = pa == null ? null : pa.getAdditionalProperties().get("status");
            Object d = status instanceof Map<?, ?> m ? ((Map<String, Object>) m).get("desiredScale") : null;
            return d instanceof Number n ? n.intValue() : -1;
        } catch (KubernetesClientException e) {
            return -1;
        }
    }

    /** The sum of a metric's samples whose labels contain {@code label}, from the autoscaler's /q/metrics. */
    private double metric(String name, String label) throws Exception {
        String body = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/q/metrics"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
        return body.lines().filter(l -> (l.startsWith(name + "{") || l.startsWith(name + " ")) && l.contains(label))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }
}
