package io.dilu.autoscaler.knative;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.history.ConfigMapHistoryStore;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.core.scaling.FunctionHistory;
import io.dilu.core.scaling.KeepAlive;
import io.dilu.core.scaling.LearnedHistory;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.testing.KubeClients;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The autoscaler's leader is killed mid-run and a new one takes over, on a real kube-apiserver with Knative's
 * PodAutoscaler CRD and the time passed in ({@link TestingClock}). The leader ticks a revision of Dilu's class
 * through 28 spells of requests, each followed by 81–83 s without one, so that its idle-time histogram holds a
 * pattern ({@link KeepAlive#MIN_SAMPLES} gaps and more); it is abandoned in the middle of an idle spell, with no
 * orderly close and no last save, as a SIGKILL leaves a process (its connections simply go). A new leader starts on
 * the same API server and goes on. Beside them a control scaler, core's {@link RevisionScaler} never interrupted, is
 * fed each tick's readings and knobs as the leaders decided on them: after the handover the new leader's decisions and
 * keep-until times are the control's, tick by tick, and so is everything it has learned. A new leader whose store is
 * empty (a namespace where nothing was kept) keeps the next released instance for the fixed keep-alive instead: the
 * test can fail.
 *
 * <p>In {@code replace} mode with no pods, the activators' reports (the test's) are the revision's whole rate, so every
 * reading is the test's. The real API server serves the PodAutoscalers, their targets and the history ConfigMaps;
 * awaitility waits only for watches to catch up and for the store's writer.
 */
class HistoryHandoverIT {

    static final String NS = PaReconcilerHistoryTest.NS;
    static final String OWN = "dilu-system";
    static final String EMPTY = "empty-system";
    static final String REVISION = "h";
    static final Instant T0 = Instant.parse("2026-11-24T05:00:00Z");
    /**
     * Spells before the kill: 20 gaps make the pattern, and the keep-until only ever grows while instances are parked
     * (core's Lazy), so the fixed 10 minutes given to the releases before the pattern must have run out too.
     */
    static final int CYCLES_BEFORE = 28;
    /** Seconds into the idle spell after the last spell before the kill: 20 s after the instance parked. */
    static final int KILL_INTO_IDLE = 60;

    static RealApiServer api;
    @TempDir
    static Path tmp;
    static Path kubeconfig;
    static final List<ExecutorService> scrapes = new ArrayList<>();
    static final List<KubernetesClient> clients = new ArrayList<>();

    /** The activators' rate, as the test says it at each tick. */
    static volatile double rps;

    @BeforeAll
    static void start() throws Exception {
        api = RealApiServer.start();
        Path crds = RealApiServer.root().resolve("e2e/src/test/resources/knative-crds");
        api.installCrd(crds.resolve("podautoscalers.autoscaling.internal.knative.dev.yaml"));
        api.installCrd(crds.resolve("serverlessservices.networking.internal.knative.dev.yaml"));
        for (String ns : List.of(NS, OWN, EMPTY)) {
            api.createNamespace(ns, Map.of());
        }
        kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));
    }

    @AfterAll
    static void stop() {
        clients.forEach(KubernetesClient::close);
        scrapes.forEach(ExecutorService::shutdownNow);
        if (api != null) {
            api.close();
        }
    }

    static final AutoscalerConfig CONFIG = new SmallRyeConfigBuilder().withMapping(AutoscalerConfig.class)
            .withDefaultValues(Map.of("dilu.autoscaler.mode", "replace", "dilu.autoscaler.lease-namespace", OWN))
            .withConverter(Duration.class, 200, new DurationConverter()).build().getConfigMapping(AutoscalerConfig.class);

    /** A replica's reconciler, as AutoscalerApp builds it, on a client of its own, keeping histories in {@code store}. */
    static PaReconciler replica(TestingClock clock, String store, SimpleMeterRegistry metrics) throws Exception {
        KubernetesClient client = KubeClients.fromKubeconfig(kubeconfig);
        clients.add(client);
        ExecutorService io = Executors.newFixedThreadPool(1);
        scrapes.add(io);
        StatScraper scraper = new StatScraper(new StatScraper.Limits(CONFIG.queueProxyPort(), CONFIG.scrapeTimeout(),
                CONFIG.scrapeMaxBytes(), CONFIG.maxPodRps()), io, new SimpleMeterRegistry());
        PaReconciler r = new PaReconciler(client, CONFIG, scraper, clock, metrics, new PaWriter(client),
                (ns, rev, now) -> new PaReconciler.ActivatorLoad.Load(rps, rps / 10), new ConfigMapHistoryStore(client, store));
        r.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> r.seen(NS, REVISION));
        return r;
    }

    /** Where cycle {@code c} starts, in seconds from T0: each is 2 s at 5 rps, then 80–82 s without a request. */
    static int cycleStart(int c) {
        int start = 0;
        for (int i = 0; i < c; i++) {
            start += 2 + 80 + i % 3;
        }
        return start;
    }

    static double rate(long second) {
        int c = 0;
        while (cycleStart(c + 1) <= second) {
            c++;
        }
        return second - cycleStart(c) < 2 ? 5 : 0;
    }

    /** One tick of {@code r} at the clock's second: the rate set, decided, the clock a second on. */
    static PaReconciler.Decided tick(PaReconciler r, TestingClock clock) {
        rps = rate(Duration.between(T0, clock.instant()).getSeconds());
        r.tick();
        PaReconciler.Decided d = r.decided(NS, REVISION);
        clock.advance(Duration.ofSeconds(1));
        return d;
    }

    /** What the uninterrupted control decided at one second, and until when it keeps released instances. */
    record Control(RevisionScaler.Decision decision, Optional<LearnedHistory> learned) {}

    @Test
    void aNewLeaderDecidesFromTheStoredHistoryAsTheKilledLeaderWouldHaveAndOneWithAnEmptyStoreDoesNot() throws Exception {
        String uid = PaReconcilerHistoryTest.revision(api.client(), REVISION);
        TestingClock clock = new TestingClock(T0);
        PaReconciler leader = replica(clock, OWN, new SimpleMeterRegistry());
        RevisionScaler control = null;
        int kill = cycleStart(CYCLES_BEFORE) + 2 + KILL_INTO_IDLE;
        for (int t = 0; t < kill; t++) {
            PaReconciler.Decided d = tick(leader, clock);
            if (control == null) {
                control = RevisionScaler.of(d.knobs().policy(), CONFIG.lazyScaling(), -1);
            }
            assertThat(control.decide(d.readings(), d.knobs(), d.at())).as("second %d: one machine", t).isEqualTo(d.decision());
        }
        LearnedHistory atKill = leader.decided(NS, REVISION).learned().orElseThrow();
        assertThat(new KeepAlive(FunctionHistory.PARAMETERS).pattern(atKill.history().idle()))
                .as("the idle times hold a pattern").isInstanceOf(KeepAlive.Pattern.Learned.class);
        assertThat(atKill.parkedUntil()).as("the last instance parked, kept by the pattern").isPresent();
        // The state last changed when the instance parked, 20 s ago: the periodic save has stored it, as it would
        // have before any kill. Waiting here is for the store's writer thread, not for the decision.
        await().atMost(Duration.ofSeconds(60)).until(() -> atKill.encode().equals(stored(uid, OWN)));

        // Killed: its client goes (connections drop), nothing is closed or saved; it never ticks again.
        clients.getFirst().close();

        Instant handover = clock.instant();
        SimpleMeterRegistry nextMetrics = new SimpleMeterRegistry();
        PaReconciler next = replica(clock, OWN, nextMetrics);
        List<Control> controls = new ArrayList<>();
        int after = 3 * 84;
        for (int t = 0; t < after; t++) {
            PaReconciler.Decided d = tick(next, clock);
            RevisionScaler.Decision c = control.decide(d.readings(), d.knobs(), d.at());
            controls.add(new Control(c, control.learned()));
            assertThat(d.decision()).as("%s after the handover: the decision", Duration.ofSeconds(t)).isEqualTo(c);
            assertThat(d.learned()).as("%s after the handover: what it has learned and its keep-until", Duration.ofSeconds(t))
                    .isEqualTo(control.learned());
        }
        assertThat(nextMetrics.get("dilu_autoscaler_histories_total").tag("result", "restored").counter().count()).isEqualTo(1);
        List<Instant> keepUntils = controls.stream().map(c -> c.learned().orElseThrow().parkedUntil().orElseThrow())
                .distinct().toList();
        assertThat(keepUntils).as("the next spells' instances were released and kept by the pattern").hasSizeGreaterThan(1);

        // The negative control: a new leader at the same moment whose store holds nothing, fed the same rates.
        TestingClock again = new TestingClock(handover);
        PaReconciler forgetful = replica(again, EMPTY, new SimpleMeterRegistry());
        int differ = 0;
        Duration keptFor = null;
        for (int t = 0; t < after; t++) {
            PaReconciler.Decided d = tick(forgetful, again);
            Optional<Instant> keep = d.learned().flatMap(LearnedHistory::parkedUntil);
            Optional<Instant> controlKeep = controls.get(t).learned().flatMap(LearnedHistory::parkedUntil);
            if (!d.decision().equals(controls.get(t).decision()) || !keep.equals(controlKeep)) {
                differ++;
            }
            if (keptFor == null && keep.isPresent()) {
                Instant lastActive = d.learned().orElseThrow().history().idleTracker().lastOn().orElseThrow();
                keptFor = Duration.between(lastActive, keep.get());
            }
        }
        assertThat(keptFor).as("without its history: the fixed keep-alive").isEqualTo(KeepAlive.FIXED_KEEP_ALIVE);
        assertThat(differ).as("ticks where the forgetful leader decided otherwise than the control").isPositive();
    }

    static String stored(String uid, String namespace) {
        ConfigMap cm = api.client().configMaps().inNamespace(namespace).withName(ConfigMapHistoryStore.name(uid)).get();
        return cm == null ? null : cm.getData().get(ConfigMapHistoryStore.KEY);
    }
}
