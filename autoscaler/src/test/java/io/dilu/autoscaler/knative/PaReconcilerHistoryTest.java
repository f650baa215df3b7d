package io.dilu.autoscaler.knative;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.history.ConfigMapHistoryStore;
import io.dilu.autoscaler.history.HistoryStore;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.scaling.FunctionHistory;
import io.dilu.core.scaling.LearnedHistory;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The reconciler's revisions' learned histories in ConfigMaps of the autoscaler's namespace, on fabric8's fake API
 * server (CRUD mode) with the time passed in: when they are written, what a fresh reconciler (a new leader) takes up,
 * and what it refuses. In {@code replace} mode with no pods, the activators' reports are the revision's whole rate:
 * every reading is the test's.
 */
@EnableKubernetesMockClient(crud = true)
class PaReconcilerHistoryTest {

    static final String NS = "fns";
    static final String OWN = "dilu-system";

    KubernetesClient client;

    private final TestingClock clock = new TestingClock(Instant.parse("2026-11-24T05:00:00Z"));
    private final ExecutorService io = Executors.newFixedThreadPool(1);
    private final List<PaReconciler> reconcilers = new ArrayList<>();
    private volatile double rps;
    private AutoscalerConfig config;

    /** The store the reconciler writes through, counting the writes it is asked for and failing them when told. */
    final class CountingStore implements HistoryStore {
        final ConfigMapHistoryStore inCluster = new ConfigMapHistoryStore(client, OWN);
        final List<String> writes = new ArrayList<>();
        volatile boolean failing;

        @Override
        public boolean start(Duration wait) {
            return inCluster.start(wait);
        }

        @Override
        public Optional<String> read(String uid) {
            return inCluster.read(uid);
        }

        @Override
        public Set<String> owners() {
            return inCluster.owners();
        }

        @Override
        public CompletionStage<Void> write(Owner owner, String state) {
            writes.add(state);
            if (failing) {
                throw new KubernetesClientException("the API server is away"); // thrown, not even a failed stage
            }
            return inCluster.write(owner, state);
        }

        @Override
        public CompletionStage<Void> delete(String uid) {
            return inCluster.delete(uid);
        }

        @Override
        public void close() {
            inCluster.close();
        }
    }

    @AfterEach
    void stop() {
        reconcilers.forEach(PaReconciler::close);
        io.shutdownNow();
    }

    private PaReconciler start(HistoryStore store, SimpleMeterRegistry metrics) {
        config = new SmallRyeConfigBuilder().withMapping(AutoscalerConfig.class)
                .withDefaultValues(Map.of("dilu.autoscaler.mode", "replace", "dilu.autoscaler.lease-namespace", OWN))
                .withConverter(Duration.class, 200, new DurationConverter()).build().getConfigMapping(AutoscalerConfig.class);
        StatScraper scraper = new StatScraper(new StatScraper.Limits(config.queueProxyPort(), config.scrapeTimeout(),
                config.scrapeMaxBytes(), config.maxPodRps()), io, new SimpleMeterRegistry());
        PaReconciler r = new PaReconciler(client, config, scraper, clock, metrics, new PaWriter(client),
                (ns, rev, now) -> new PaReconciler.ActivatorLoad.Load(rps, rps / 10), store);
        reconcilers.add(r);
        r.start();
        return r;
    }

    private String revision(String name) {
        return revision(client, name);
    }

    /**
     * A revision of Dilu's class in {@link #NS} that may scale to zero (initial scale 0), one instance serving 10 rps:
     * its Deployment and its PodAutoscaler; the PA's UID. HistoryHandoverIT's too.
     */
    static String revision(KubernetesClient client, String name) {
        client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata()
                .withName(name + "-deployment").endMetadata().withNewSpec().withReplicas(0).withNewSelector()
                .addToMatchLabels("app", name).endSelector().withNewTemplate().withNewMetadata().addToLabels("app", name)
                .endMetadata().withNewSpec().addNewContainer().withName("user").withImage("fn").endContainer().endSpec()
                .endTemplate().endSpec().build()).create();
        PodAutoscaler pa = new PodAutoscaler();
        pa.getMetadata().setName(name);
        pa.getMetadata().setNamespace(NS);
        pa.getMetadata().setGeneration(1L);
        pa.getMetadata().setAnnotations(Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS, KnativeNames.INITIAL_SCALE,
                "0", DiluNames.SERVING_RPS, "10"));
        pa.getMetadata().setLabels(Map.of(KnativeNames.REVISION_LABEL, name));
        pa.setSpec(new PodAutoscaler.Spec(new ObjectReferenceBuilder().withApiVersion("apps/v1").withKind("Deployment")
                .withName(name + "-deployment").build(), 0L, "http1", null));
        return client.resources(PodAutoscaler.class).inNamespace(NS).resource(pa).create().getMetadata().getUid();
    }

    private ConfigMap stored(String uid) {
        return client.configMaps().inNamespace(OWN).withName(ConfigMapHistoryStore.name(uid)).get();
    }

    private String storedText(String uid) {
        ConfigMap cm = stored(uid);
        return cm == null ? null : cm.getData().get(ConfigMapHistoryStore.KEY);
    }

    private static void until(BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 1000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertThat(condition.getAsBoolean()).as("the watch caught up").isTrue();
    }

    private void ticks(PaReconciler r, int seconds, double rate) {
        rps = rate;
        for (int i = 0; i < seconds; i++) {
            r.tick();
            clock.advance(Duration.ofSeconds(1));
        }
    }

    /** {@code cycles} times 2 s at 5 rps and 80 s without a request: each idle spell is a gap the history learns. */
    private void cycles(PaReconciler r, int cycles) {
        for (int c = 0; c < cycles; c++) {
            ticks(r, 2, 5);
            ticks(r, 80, 0);
        }
    }

    private static LearnedHistory learned(PaReconciler r) {
        return r.decided(NS, "h").learned().orElseThrow();
    }

    private static double histories(SimpleMeterRegistry metrics, String result) {
        return metrics.get("dilu_autoscaler_histories_total").tag("result", result).counter().count();
    }

    @Test
    void aChangeIsStoredAtOnceThenAtMostOncePerPeriodAndNotAgainWhileUnchanged() throws Exception {
        CountingStore store = new CountingStore();
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        PaReconciler r = start(store, metrics);
        String uid = revision("h");
        until(() -> r.seen(NS, "h"));

        ticks(r, 1, 5);
        assertThat(store.writes).as("a revision's first state is written at once").hasSize(1);
        until(() -> storedText(uid) != null);
        assertThat(storedText(uid)).isEqualTo(learned(r).encode());
        ConfigMap cm = stored(uid);
        assertThat(cm.getMetadata().getLabels()).containsEntry(ConfigMapHistoryStore.LABEL, "true")
                .containsEntry(ConfigMapHistoryStore.PA_NAMESPACE_LABEL, NS).containsEntry(ConfigMapHistoryStore.PA_NAME_LABEL, "h");

        ticks(r, 9, 5);
        assertThat(store.writes).as("busy every second, but not written again within the 10 s period").hasSize(1);
        ticks(r, 1, 5);
        assertThat(store.writes).as("a period after the first write, the changed state is written").hasSize(2);

        ticks(r, 120, 0); // idle: the trackers go off, the instance parks (40 s), then nothing changes
        int settled = store.writes.size();
        ticks(r, 100, 0);
        assertThat(store.writes).as("unchanged: not written again").hasSize(settled);
        until(() -> learned(r).encode().equals(storedText(uid)));
        assertThat(LearnedHistory.decode(storedText(uid), clock.instant(), new ArrayList<>())).contains(learned(r));
        assertThat(learned(r).parkedUntil()).as("the keep-until of the parked instance is part of it").isPresent();
        until(() -> histories(metrics, "written") == settled);
    }

    @Test
    void aFreshReconcilerTakesUpTheStoredHistoryAndOneWithoutAStoreLearnsFromZero() throws Exception {
        PaReconciler leader = start(new CountingStore(), new SimpleMeterRegistry());
        String uid = revision("h");
        until(() -> leader.seen(NS, "h"));
        cycles(leader, 4);
        LearnedHistory before = learned(leader);
        assertThat(before.history().idle().samples()).as("the gaps learned").isEqualTo(3);
        until(() -> before.encode().equals(storedText(uid)));
        // The leader is gone without a word (its informers keep running, it ticks no more).

        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        PaReconciler next = start(new ConfigMapHistoryStore(client, OWN), metrics);
        PaReconciler forgetful = start(HistoryStore.NONE, new SimpleMeterRegistry());
        until(() -> next.seen(NS, "h") && forgetful.seen(NS, "h"));
        next.tick();
        forgetful.tick();

        LearnedHistory after = learned(next);
        assertThat(after.history().idle()).isEqualTo(before.history().idle());
        assertThat(after.history().bursts()).isEqualTo(before.history().bursts());
        assertThat(after.history().idleTracker()).as("idle since the same request").isEqualTo(before.history().idleTracker());
        assertThat(after.parkedUntil()).isEqualTo(before.parkedUntil()).isPresent();
        assertThat(next.decided(NS, "h").decision().desired()).as("the scale the leader asked (its status)").isZero();
        assertThat(histories(metrics, "restored")).isEqualTo(1);
        assertThat(learned(forgetful).history().idle().samples()).as("without the store: from zero").isZero();
        assertThat(learned(forgetful).parkedUntil()).isEmpty();
    }

    @Test
    void aPodAutoscalerThatGoesTakesItsStoredHistoryAlongAndAStartRemovesThoseOfPodAutoscalersGoneMeanwhile()
            throws Exception {
        String gone = "6b1d7e1c-0000-4000-8000-000000000001";
        client.configMaps().inNamespace(OWN).resource(new ConfigMapBuilder().withNewMetadata()
                .withName(ConfigMapHistoryStore.name(gone)).addToLabels(ConfigMapHistoryStore.LABEL, "true").endMetadata()
                .addToData(ConfigMapHistoryStore.KEY, "version 1").build()).create();
        String kept = revision("h");
        String other = revision("o");
        PaReconciler r = start(new CountingStore(), new SimpleMeterRegistry());
        until(() -> stored(gone) == null);

        until(() -> r.seen(NS, "h") && r.seen(NS, "o"));
        ticks(r, 1, 5);
        until(() -> stored(kept) != null && stored(other) != null);
        client.resources(PodAutoscaler.class).inNamespace(NS).withName("o").delete();
        until(() -> !r.seen(NS, "o"));
        ticks(r, 1, 5);
        until(() -> stored(other) == null);
        assertThat(stored(kept)).as("the live revision's stays").isNotNull();
    }

    @Test
    void aMalformedStoredStateIsRefusedWholeTheRevisionLearnsFromZeroAndItsNextSaveReplacesIt() throws Exception {
        String uid = revision("h");
        PaReconciler leader = start(HistoryStore.NONE, new SimpleMeterRegistry());
        until(() -> leader.seen(NS, "h"));
        cycles(leader, 3);
        // A good state, but for one line: its idle histogram in the paper's minute bins, which this policy does not read.
        String bad = learned(leader).encode().replaceFirst("(?m)^idle bin=PT10S", "idle bin=PT1M");
        assertThat(bad).isNotEqualTo(learned(leader).encode());
        client.configMaps().inNamespace(OWN).resource(new ConfigMapBuilder().withNewMetadata()
                .withName(ConfigMapHistoryStore.name(uid)).addToLabels(ConfigMapHistoryStore.LABEL, "true").endMetadata()
                .addToData(ConfigMapHistoryStore.KEY, bad).build()).create();

        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        PaReconciler next = start(new ConfigMapHistoryStore(client, OWN), metrics);
        until(() -> next.seen(NS, "h"));
        ticks(next, 1, 0);

        assertThat(histories(metrics, "refused")).isEqualTo(1);
        assertThat(histories(metrics, "restored")).isZero();
        LearnedHistory fresh = learned(next);
        assertThat(fresh.history().idle().samples()).as("not half of it: its good bursts line neither").isZero();
        assertThat(fresh.history().bursts()).isEqualTo(FunctionHistory.Snapshot.empty().bursts());
        assertThat(fresh.parkedUntil()).isEmpty();
        until(() -> fresh.encode().equals(storedText(uid)));
    }

    @Test
    void aWriteThatFailsLeavesTheTickAloneAndIsTriedAgainAPeriodLater() throws Exception {
        CountingStore store = new CountingStore();
        store.failing = true;
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        PaReconciler r = start(store, metrics);
        String uid = revision("h");
        until(() -> r.seen(NS, "h"));

        ticks(r, 5, 5);
        assertThat(store.writes).hasSize(1);
        assertThat(histories(metrics, "write-failed")).isEqualTo(1);
        assertThat(r.decided(NS, "h").decision().desired()).as("the tick decided and wrote on").isEqualTo(1);
        until(() -> client.apps().deployments().inNamespace(NS).withName("h-deployment").get().getSpec().getReplicas() == 1);

        store.failing = false;
        ticks(r, 4, 5);
        assertThat(store.writes).as("not before a period has passed since the failed try").hasSize(1);
        ticks(r, 2, 5);
        assertThat(store.writes).hasSize(2);
        until(() -> storedText(uid) != null);
        assertThat(LearnedHistory.decode(storedText(uid), clock.instant(), new ArrayList<>())).isPresent();
    }
}
