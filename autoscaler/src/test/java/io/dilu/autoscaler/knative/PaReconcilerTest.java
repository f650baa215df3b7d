package io.dilu.autoscaler.knative;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.autoscaler.decide.ServingRate;
import io.dilu.autoscaler.scrape.FakeQueueProxy;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.ScaleBounds;
import io.dilu.kube.PodShares;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The reconciler on informers of a fake API server (fabric8's, in CRUD mode), with queue-proxies on loopback
 * addresses and the time passed in, in the spirit of Knative's kpa_test.go: given PodAutoscalers, pods, the
 * activators' reports and config-autoscaler, what it scales and which ServerlessService and status it writes.
 */
@EnableKubernetesMockClient(crud = true)
class PaReconcilerTest {

    static final String NS = "fns";
    static final String DILU = DiluNames.AUTOSCALER_CLASS;

    KubernetesClient client;

    private final TestingClock clock = new TestingClock(Instant.parse("2026-11-24T05:00:00Z"));
    private final ExecutorService io = Executors.newFixedThreadPool(2);
    private final List<FakeQueueProxy> proxies = new ArrayList<>();
    private final Map<String, PaReconciler.ActivatorLoad.Load> activatorLoad = new HashMap<>();
    private PaReconciler reconciler;
    private int port;

    @AfterEach
    void stop() throws Exception {
        if (reconciler != null) {
            reconciler.close();
        }
        for (FakeQueueProxy p : proxies) {
            p.close();
        }
        io.shutdownNow();
    }

    private void start(String... config) throws Exception {
        start(new SimpleMeterRegistry(), config);
    }

    private void start(SimpleMeterRegistry metrics, String... config) throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Map<String, String> values = new HashMap<>(Map.of("dilu.autoscaler.queue-proxy-port", Integer.toString(port)));
        for (int i = 0; i < config.length; i += 2) {
            values.put(config[i], config[i + 1]);
        }
        // The shipped defaults, read as Quarkus reads them (its duration form: 1s, 800ms).
        AutoscalerConfig ac = new SmallRyeConfigBuilder().withMapping(AutoscalerConfig.class).withDefaultValues(values)
                .withConverter(Duration.class, 200, new DurationConverter()).build().getConfigMapping(AutoscalerConfig.class);
        StatScraper scraper = new StatScraper(new StatScraper.Limits(port, ac.scrapeTimeout(), ac.scrapeMaxBytes(), ac.maxPodRps()),
                io, new SimpleMeterRegistry());
        reconciler = new PaReconciler(client, ac, scraper, clock, metrics, new PaWriter(client),
                (ns, rev, now) -> activatorLoad.getOrDefault(ns + "/" + rev, PaReconciler.ActivatorLoad.Load.NONE));
        reconciler.start();
    }

    /** A revision: its Deployment and its PodAutoscaler, with these annotations. */
    private void revision(String name, String paClass, Map<String, String> annotations) throws InterruptedException {
        client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata().withName(name + "-deployment")
                .endMetadata().withNewSpec().withReplicas(0).withNewSelector().addToMatchLabels("app", name).endSelector()
                .withNewTemplate().withNewMetadata().addToLabels("app", name).endMetadata().withNewSpec().addNewContainer()
                .withName("user").withImage("fn").endContainer().endSpec().endTemplate().endSpec().build()).create();
        PodAutoscaler pa = new PodAutoscaler();
        pa.getMetadata().setName(name);
        pa.getMetadata().setNamespace(NS);
        pa.getMetadata().setGeneration(1L);
        Map<String, String> a = new HashMap<>(annotations);
        if (paClass != null) {
            a.put(KnativeNames.CLASS, paClass);
        }
        pa.getMetadata().setAnnotations(a);
        pa.getMetadata().setLabels(Map.of(KnativeNames.REVISION_LABEL, name));
        pa.setSpec(new PodAutoscaler.Spec(new ObjectReferenceBuilder().withApiVersion("apps/v1").withKind("Deployment")
                .withName(name + "-deployment").build(), 0L, "http1", null));
        client.resources(PodAutoscaler.class).inNamespace(NS).resource(pa).create();
        until(() -> reconciler.seen(NS, name));
    }

    /** A ready pod of the revision on its own loopback address, whose queue-proxy reports {@code stat}. */
    private void readyPod(String revision, int index, Stat stat) throws Exception {
        String ip = "127.0.0." + (10 + index);
        proxies.add(FakeQueueProxy.start(ip, port, FakeQueueProxy.ok(stat.toByteArray())));
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(revision + "-" + index)
                .addToLabels(KnativeNames.REVISION_LABEL, revision).endMetadata().withNewStatus().withPodIP(ip)
                .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus().build()).create();
        until(() -> reconciler.seen(NS, revision) && !reconciler.pods(NS, revision).scraped().isEmpty());
    }

    private static Stat stat(double rps, double concurrency) {
        return Stat.newBuilder().setPodName("p").setRequestCount(rps).setAverageConcurrentRequests(concurrency).build();
    }

    private PodAutoscaler pa(String name) {
        return client.resources(PodAutoscaler.class).inNamespace(NS).withName(name).get();
    }

    private ServerlessService sks(String name) {
        return client.resources(ServerlessService.class).inNamespace(NS).withName(name).get();
    }

    private int replicas(String revision) {
        return client.apps().deployments().inNamespace(NS).withName(revision + "-deployment").get().getSpec().getReplicas();
    }

    /** Waits until the informers have caught up with what the test wrote. */
    private static void until(BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 1000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertThat(condition.getAsBoolean()).as("the informers caught up").isTrue();
    }

    private void ticks(int seconds) {
        for (int i = 0; i < seconds; i++) {
            reconciler.tick();
            clock.advance(Duration.ofSeconds(1));
        }
    }

    @Test
    void aNewRevisionStartsAtItsInitialScaleWithAServingSksAndItsStatus() throws Exception {
        start();
        revision("r1", DILU, Map.of(KnativeNames.INITIAL_SCALE, "2"));
        reconciler.tick();

        assertThat(replicas("r1")).isEqualTo(2);
        ServerlessService sks = sks("r1");
        assertThat(sks.getSpec().mode()).isEqualTo(ServerlessService.SERVE);
        assertThat(sks.getSpec().numActivators()).as("Knative's rule: ceil(211 / 100) with no pod ready").isEqualTo(3);
        assertThat(sks.getSpec().objectRef().getName()).isEqualTo("r1-deployment");
        assertThat(sks.getMetadata().getOwnerReferences()).singleElement()
                .satisfies(o -> assertThat(o.getName()).isEqualTo("r1"));
        PodAutoscaler.Status status = pa("r1").getStatus();
        assertThat(status.desiredScale()).isEqualTo(2);
        assertThat(status.actualScale()).isZero();
        assertThat(status.serviceName()).isEqualTo("r1");
        assertThat(status.conditions()).extracting(c -> c.getType() + "=" + c.getStatus())
                .containsExactly("Active=False", "ScaleTargetInitialized=Unknown", "SKSReady=Unknown", "Ready=False");
    }

    @Test
    void alongsideKnativeItLeavesKnativesOwnClassAlone() throws Exception {
        start();
        revision("mine", DILU, Map.of());
        revision("kpa", null, Map.of());
        reconciler.tick();

        assertThat(reconciler.handles(pa("kpa"))).isFalse();
        assertThat(sks("kpa")).isNull();
        assertThat(pa("kpa").getStatus()).isNull();
        assertThat(replicas("kpa")).isZero();
        assertThat(replicas("mine")).isEqualTo(1);
    }

    @Test
    void replacingKnativeItScalesKnativesClassAsTheKpaDocumentsIt() throws Exception {
        // knative.dev, "Configuring targets": a target of 10 at 70% utilization means a pod per 7 concurrent
        // requests, so 35 in flight ask for 5 pods.
        start("dilu.autoscaler.mode", "replace");
        revision("kpa", null, Map.of(KnativeNames.TARGET, "10"));
        readyPod("kpa", 1, stat(35, 35));
        ticks(3);
        assertThat(replicas("kpa")).isEqualTo(5);
        assertThat(pa("kpa").getStatus().desiredScale()).isEqualTo(5);
        assertThat(pa("kpa").getStatus().actualScale()).isEqualTo(1);
        assertThat(sks("kpa").getSpec().numActivators()).as("ceil((1 pod x 10 + 211) / 100)").isEqualTo(3);
    }

    @Test
    void replacingKnativeARevisionAtZeroWakesWhenAnActivatorReportsARequest() throws Exception {
        start("dilu.autoscaler.mode", "replace");
        revision("idle", DILU, Map.of(KnativeNames.INITIAL_SCALE, "0"));
        ticks(1);
        assertThat(replicas("idle")).as("initial-scale 0, scale to zero on in replace mode").isZero();
        assertThat(sks("idle").getSpec().mode()).isEqualTo(ServerlessService.PROXY);
        assertThat(pa("idle").getStatus().desiredScale()).isZero();

        activatorLoad.put(NS + "/idle", new PaReconciler.ActivatorLoad.Load(1, 1)); // the activator's first-request stat
        reconciler.poke(NS, "idle");
        assertThat(replicas("idle")).isEqualTo(1);
        assertThat(pa("idle").getStatus().desiredScale()).isEqualTo(1);
        assertThat(sks("idle").getSpec().mode()).isEqualTo(ServerlessService.SERVE);
    }

    @Test
    void aRevisionsProfileGivesItsRateAtTheLimitBesideItsRateAtTheRequestAndAHostileOneIsReported() throws Exception {
        start();
        for (String[] p : new String[][] {{"bert", "192"}, {"hostile", "-1"}}) {
            client.resources(GpuFunctionProfile.class).inNamespace(NS).resource(new GpuFunctionProfile(new ObjectMetaBuilder()
                    .withName(p[0]).build(), new ProfileSpec(p[0], null, 20, 40, 2048L, 4, null, null, null, 120.0,
                    Double.valueOf(p[1]), null, null, null, null, null), null)).create();
        }
        revision("r", DILU, Map.of("dilu.io/profile", "bert"));
        revision("h", DILU, Map.of("dilu.io/profile", "hostile"));
        List<FieldError> problems = new ArrayList<>();
        until(() -> reconciler.servingRate(NS, "r", problems).source().startsWith("GpuFunctionProfile")
                && reconciler.servingRate(NS, "h", problems).source().startsWith("GpuFunctionProfile"));
        problems.clear();

        InstanceRate r = reconciler.servingRate(NS, "r", problems);
        assertThat(r.rps()).isEqualTo(120);
        assertThat(r.rpsAtLimit()).isEqualTo(192);
        InstanceRate h = reconciler.servingRate(NS, "h", problems);
        assertThat(h.rps()).isEqualTo(120);
        assertThat(h.rpsAtLimit()).isNaN();
        assertThat(problems).extracting(FieldError::message).containsExactly("GpuFunctionProfile hostile "
                + "spec.servingThroughputRpsAtLimit=-1.0 is not allowed: must be a number in 120..1e7, at least "
                + "spec.servingThroughputRps (a larger share does not serve less)");
    }

    @Test
    void alongsideKnativeScaleToZeroStaysOffWhateverConfigAutoscalerSaysButItsMaxScaleHolds() throws Exception {
        start();
        client.configMaps().inNamespace(KnativeNames.SERVING_NAMESPACE).resource(new ConfigMapBuilder().withNewMetadata()
                .withName(KnativeNames.CONFIG_AUTOSCALER).endMetadata().addToData("enable-scale-to-zero", "true")
                .addToData("max-scale", "3").build()).create();
        until(() -> reconciler.clusterConfigSeen());
        revision("r", DILU, Map.of(KnativeNames.INITIAL_SCALE, "0", DiluNames.SERVING_RPS, "10"));
        ticks(1);
        assertThat(replicas("r")).as("a revision at zero would not wake alongside Knative's autoscaler").isEqualTo(1);

        readyPod("r", 2, stat(100, 10));
        ticks(25);
        assertThat(replicas("r")).as("100 rps at 10 each, capped by config-autoscaler's max-scale").isEqualTo(3);
    }

    /**
     * A serving pod of Dilu's class as the webhook and the extender leave it: a readiness gate on dilu.io/serving, that
     * condition True, Ready; its queue-proxy reports what {@code stat} holds at each scrape.
     */
    private void gatedPod(String revision, int index, AtomicReference<Stat> stat) throws Exception {
        String ip = "127.0.0." + (10 + index);
        proxies.add(FakeQueueProxy.start(ip, port, out -> FakeQueueProxy.ok(stat.get().toByteArray()).write(out)));
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(revision + "-" + index)
                .withCreationTimestamp("2026-11-24T04:00:0" + index + "Z").addToLabels(KnativeNames.REVISION_LABEL, revision)
                .endMetadata().withNewSpec().addNewReadinessGate(DiluNames.SERVING_CONDITION).endSpec().withNewStatus()
                .withPodIP(ip).addNewCondition().withType("Ready").withStatus("True").endCondition().addNewCondition()
                .withType(DiluNames.SERVING_CONDITION).withStatus("True").endCondition().endStatus().build()).create();
        until(() -> reconciler.pods(NS, revision).instances().stream().anyMatch(p -> p.name().equals(revision + "-" + index)));
    }

    private Pod pod(String name) {
        return client.pods().inNamespace(NS).withName(name).get();
    }

    private double wakes(SimpleMeterRegistry metrics, String result) {
        return metrics.get("dilu_autoscaler_wakes_total").tag("result", result).counter().count();
    }

    @Test
    void aReleasedInstanceIsParkedOutOfThePathAScaleOutWakesItAndAFailedWakeIsDeletedAndCounted() throws Exception {
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        start(metrics);
        revision("p", DILU, Map.of(KnativeNames.INITIAL_SCALE, "2", DiluNames.SERVING_RPS, "10"));
        AtomicReference<Stat> load = new AtomicReference<>(stat(4, 1));
        gatedPod("p", 1, load);
        gatedPod("p", 2, load);
        // 8 rps against 10 per instance: once more than 30 of the 40 s window's seconds ask for one instance fewer,
        // the released one is parked (no learnt pattern: the history expects the function back for 10 minutes).
        ticks(45);
        assertThat(replicas("p")).as("one serving, one parked: the Deployment keeps both").isEqualTo(2);
        until(() -> reconciler.pods(NS, "p").parkedCount() == 1);
        String parkedName = reconciler.pods(NS, "p").instances().stream().filter(p -> p.parkedAt().isPresent()).findFirst()
                .orElseThrow().name();
        String servingName = parkedName.equals("p-1") ? "p-2" : "p-1";
        Pod parked = pod(parkedName);
        assertThat(PodShares.serving(parked)).as("out of the request path").isFalse();
        assertThat(pod(servingName).getMetadata().getAnnotations()).as("the other one serves").isNullOrEmpty();
        until(() -> !PodShares.serving(reconciler.podSeen(parkedName)));
        assertThat(reconciler.pods(NS, "p").scraped()).as("a parked pod serves nothing: not scraped")
                .containsExactly(parked.getStatus().getPodIP().equals("127.0.0.11") ? "127.0.0.12" : "127.0.0.11");

        // 25 rps on the one serving pod: a scale-out to three wakes the parked pod before the Deployment adds one.
        load.set(stat(25, 3));
        for (int i = 0; i < 45 && replicas("p") < 3; i++) {
            ticks(1);
        }
        assertThat(replicas("p")).isEqualTo(3);
        Pod woken = pod(parkedName);
        // (The fake API server keeps a key a merge patch removes, with a null value.)
        assertThat(woken.getMetadata().getAnnotations().get(DiluNames.PARKED)).isNull();
        assertThat(woken.getMetadata().getAnnotations().get(DiluNames.WAKE)).isNotNull();

        // The extender found no room on its GPU: the pod goes, its ReplicaSet places a new one elsewhere.
        client.pods().inNamespace(NS).withName(parkedName).edit(p -> new PodBuilder(p).editMetadata()
                .removeFromAnnotations(DiluNames.WAKE).addToAnnotations(DiluNames.WAKE_FAILED, "no room").endMetadata().build());
        until(() -> reconciler.pods(NS, "p").instances().stream().anyMatch(InstanceLifecycle.Instance::wakeFailed));
        ticks(1);
        until(() -> pod(parkedName) == null);
        assertThat(wakes(metrics, "failed")).isEqualTo(1);
        assertThat(wakes(metrics, "woken")).isZero();
    }

    /**
     * Idle, a revision's one instance is parked and stays in the request path. Alongside Knative's autoscaler (the
     * default) its revision may not reach zero, so its condition says it is kept, and the scheduler extender keeps its
     * GPU; in replace mode, with scale to zero on, it may go with its GPU.
     */
    @ParameterizedTest
    @ValueSource(strings = {"alongside", "replace"})
    void theLastInstanceParkedInThePathIsMarkedKeptOnlyWhereItsRevisionMayNotReachZero(String mode) throws Exception {
        start("dilu.autoscaler.mode", mode);
        revision("k", DILU, Map.of(KnativeNames.INITIAL_SCALE, "1", DiluNames.SERVING_RPS, "10"));
        AtomicReference<Stat> load = new AtomicReference<>(stat(0, 0));
        gatedPod("k", 1, load);
        for (int i = 0; i < 120 && reconciler.pods(NS, "k").parkedCount() == 0; i++) {
            ticks(1);
        }
        assertThat(reconciler.pods(NS, "k").parkedCount()).as("idle past the window: parked").isEqualTo(1);
        until(() -> PodShares.serving(reconciler.podSeen("k-1")));
        ticks(1);
        if (mode.equals("alongside")) {
            until(() -> PodShares.kept(reconciler.podSeen("k-1")));
        } else {
            ticks(2);
            assertThat(PodShares.kept(pod("k-1"))).as("its revision may reach zero").isFalse();
            assertThat(PodShares.serving(pod("k-1"))).as("in the path all the same").isTrue();
        }
    }

    @Test
    void withParkingOffAReleasedInstanceGoes() throws Exception {
        start("dilu.autoscaler.parking", "false");
        revision("q", DILU, Map.of(KnativeNames.INITIAL_SCALE, "2", DiluNames.SERVING_RPS, "10"));
        AtomicReference<Stat> load = new AtomicReference<>(stat(4, 1));
        gatedPod("q", 1, load);
        gatedPod("q", 2, load);
        ticks(45);
        assertThat(replicas("q")).isEqualTo(1);
        assertThat(reconciler.pods(NS, "q").parkedCount()).isZero();
    }
}
