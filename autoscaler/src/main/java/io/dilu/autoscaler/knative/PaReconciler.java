package io.dilu.autoscaler.knative;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.decide.ActivatorCap;
import io.dilu.autoscaler.history.HistoryKeeper;
import io.dilu.autoscaler.history.HistoryStore;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.LearnedHistory;
import io.dilu.core.scaling.Readings;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.core.scaling.ScalingParameters;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * Plays Knative's autoscaler for the PodAutoscalers it handles: those of class {@code co-scaling.dilu.io}, and,
 * when it replaces Knative's autoscaler, Knative's own class too. Every tick, and at once when an activator
 * reports requests for a revision, it reads (informers, a scrape of the revision's ready pods, the activators'
 * reports), decides ({@link Knobs} and {@link RevisionScaler}: pure functions of what was read and the time),
 * builds the desired ServerlessService and status ({@link Desired}, {@link PaStatus}) and writes what differs
 * ({@link PaWriter}). PodAutoscalers of other classes are not touched. Calls are not thread-safe: one thread
 * runs ticks and pokes.
 */
public final class PaReconciler {

    private static final Logger LOG = Logger.getLogger(PaReconciler.class);
    static final String BY_REVISION = "revision";
    /** The longest {@link #start} waits for the first listing. */
    static final Duration SYNC_WAIT = Duration.ofSeconds(30);

    /** What Knative's activators reported proxying to a revision, fresh at {@code now}; zero without a report. */
    @FunctionalInterface
    public interface ActivatorLoad {
        Load of(String namespace, String revision, Instant now);

        /** Requests per second and in flight, summed over activators. */
        record Load(double rps, double concurrency) {
            public static final Load NONE = new Load(0, 0);
        }
    }

    /** A revision's last decision and what it was decided from (for tests: a control scaler fed the same). */
    record Decided(Instant at, Readings readings, Knobs knobs, RevisionScaler.Decision decision,
            Optional<LearnedHistory> learned) {}

    /** What the reconciler remembers of one revision between ticks. */
    private static final class Revision {
        RevisionScaler scaler;
        Decided decided;
        RevisionKnobs.Read knobs;
        /** The scale last written to the target (serving and parked instances); -1 before the first. */
        int applied = -1;
        /** The serving instances last decided; -1 before the first. */
        int lastDesired = -1;
        boolean initialized;
        final PodLifecycle.Tracked pods = new PodLifecycle.Tracked();
        RevisionGauges gauges;
    }

    private final AutoscalerConfig config;
    private final StatScraper scraper;
    private final InstantSource clock;
    private final PaWriter writer;
    private final ActivatorLoad activators;
    private final ScalingParameters lazyDefaults;
    private final Set<String> classes;
    private final SharedIndexInformer<PodAutoscaler> pas;
    private final SharedIndexInformer<Pod> pods;
    private final SharedIndexInformer<GpuFunctionProfile> profiles;
    private final SharedIndexInformer<ServerlessService> services;
    private final SharedIndexInformer<ConfigMap> clusterConfigs;
    private final HistoryKeeper history;
    private final Map<String, Revision> revisions = new ConcurrentHashMap<>();
    private final MeterRegistry metrics;
    private final Counter scaledUp;
    private final Counter scaledDown;
    private final PodLifecycle lifecycle;
    private String clusterConfigVersion;
    private KnativeAutoscalerConfig clusterConfig = KnativeAutoscalerConfig.DEFAULTS;
    private final RevisionKnobs revisionKnobs;

    /** A reconciler that keeps no history: every leader learns afresh. */
    public PaReconciler(KubernetesClient client, AutoscalerConfig config, StatScraper scraper, InstantSource clock,
            MeterRegistry metrics, PaWriter writer, ActivatorLoad activators) {
        this(client, config, scraper, clock, metrics, writer, activators, HistoryStore.NONE);
    }

    /** @param store where the revisions' learned histories are kept for the next leader ({@link HistoryKeeper}) */
    public PaReconciler(KubernetesClient client, AutoscalerConfig config, StatScraper scraper, InstantSource clock,
            MeterRegistry metrics, PaWriter writer, ActivatorLoad activators, HistoryStore store) {
        this.config = config;
        this.history = new HistoryKeeper(store, config.historySavePeriod(), metrics);
        this.scraper = scraper;
        this.clock = clock;
        this.metrics = metrics;
        this.writer = writer;
        this.activators = activators;
        this.lazyDefaults = config.lazyScaling();
        this.classes = config.mode() == AutoscalerConfig.Mode.REPLACE ? Set.of(config.paClass(), KnativeNames.KPA_CLASS)
                : Set.of(config.paClass());
        this.scaledUp = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "up")
                .description("changes of a revision's desired scale").register(metrics);
        this.scaledDown = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "down")
                .description("changes of a revision's desired scale").register(metrics);
        this.pas = client.resources(PodAutoscaler.class).inAnyNamespace().runnableInformer(0);
        this.pods = client.pods().inAnyNamespace().withLabel(KnativeNames.REVISION_LABEL).runnableInformer(0);
        this.lifecycle = new PodLifecycle(writer, key -> pods.getStore().getByKey(key), metrics);
        // Every tick asks for one revision's pods: an index keeps that from walking every pod of the cluster.
        pods.addIndexers(Map.of(BY_REVISION, p -> List.of(p.getMetadata().getNamespace() + "/"
                + p.getMetadata().getLabels().get(KnativeNames.REVISION_LABEL))));
        // ServerlessServices are watched, not fetched: a tick makes no API call for a revision that is in line.
        this.services = client.resources(ServerlessService.class).inAnyNamespace().runnableInformer(0);
        this.profiles = client.resources(GpuFunctionProfile.class).inAnyNamespace().runnableInformer(0);
        this.revisionKnobs = new RevisionKnobs(config, profiles);
        this.clusterConfigs = client.configMaps().inNamespace(config.knativeNamespace())
                .withField("metadata.name", KnativeNames.CONFIG_AUTOSCALER).runnableInformer(0);
        for (SharedIndexInformer<?> i : List.of(pas, pods, services, profiles, clusterConfigs)) {
            i.exceptionHandler((started, t) -> true);
        }
    }

    /**
     * Starts the watches and waits (up to {@link #SYNC_WAIT}) until PodAutoscalers, pods and ServerlessServices are
     * listed, so that a replica's first tick as leader sees the cluster as it is. Profiles and config-autoscaler
     * are not waited for: either may be absent (read as none and as Knative's defaults).
     */
    public void start() {
        CompletableFuture<?>[] synced = List.of(pas, pods, services).stream()
                .map(i -> i.start().toCompletableFuture()).toArray(CompletableFuture[]::new);
        profiles.start();
        clusterConfigs.start();
        boolean listed = false;
        try {
            CompletableFuture.allOf(synced).get(SYNC_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            listed = true;
        } catch (TimeoutException | ExecutionException e) {
            LOG.warnf("PodAutoscalers, pods or ServerlessServices not listed yet (%s): the first ticks may see fewer", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!history.start(SYNC_WAIT)) {
            LOG.warn("the stored histories are not listed yet: revisions met before then learn from zero");
        } else if (listed) {
            history.prune(handledUids()); // the histories of PodAutoscalers that went while no leader ticked
        }
    }

    public void close() {
        List.of(pas, pods, services, profiles, clusterConfigs).forEach(SharedIndexInformer::close);
        history.close();
    }

    private Set<String> handledUids() {
        return pas.getStore().list().stream().filter(this::handles).map(p -> p.getMetadata().getUid())
                .collect(Collectors.toSet());
    }

    /** Whether this autoscaler scales the PodAutoscaler (its class is one it handles). */
    public boolean handles(PodAutoscaler pa) {
        return classes.contains(pa.paClass());
    }

    /**
     * One tick over every PodAutoscaler handled; the scrapes of all revisions run at once, in one round that the
     * tick closes (which drops every connection when some pod failed).
     */
    public void tick() {
        List<PodAutoscaler> mine = pas.getStore().list().stream().filter(this::handles).toList();
        reconcile(mine, clock.instant());
        Set<String> live = mine.stream().map(p -> p.getMetadata().getUid()).collect(Collectors.toSet());
        revisions.entrySet().removeIf(e -> {
            if (live.contains(e.getKey())) {
                return false;
            }
            if (e.getValue().gauges != null) {
                e.getValue().gauges.remove();
            }
            return true;
        });
        if (pas.hasSynced()) {
            history.prune(live); // and its stored history, as do those that went while another leader ticked
        }
    }

    /**
     * Decides one revision now, outside the tick: an activator has reported requests for it, and a revision at
     * zero must not wait for the next tick to wake. A revision not handled here, or one with instances, is left
     * to the tick.
     */
    public void poke(String namespace, String revision) {
        PodAutoscaler pa = pas.getStore().getByKey(namespace + "/" + revision);
        Revision known = pa == null ? null : revisions.get(pa.getMetadata().getUid());
        // As Knative's multiscaler pokes: only a revision at zero; one with instances waits for its tick.
        if (pa != null && handles(pa) && (known == null || known.applied <= 0)) {
            reconcile(List.of(pa), clock.instant());
        }
    }

    /** Whether a PodAutoscaler of this name exists and is handled here: the activator's reports for others are dropped. */
    public boolean knows(String namespace, String revision) {
        PodAutoscaler pa = pas.getStore().getByKey(namespace + "/" + revision);
        return pa != null && handles(pa);
    }

    /** Whether the PodAutoscaler is in the informer's store, whatever its class (for tests). */
    boolean seen(String namespace, String revision) {
        return pas.getStore().getByKey(namespace + "/" + revision) != null;
    }

    /** A pod as the pod informer has it (for tests). */
    Pod podSeen(String name) {
        return pods.getStore().list().stream().filter(p -> p.getMetadata().getName().equals(name)).findFirst().orElse(null);
    }

    /** A revision's pods as the pod informer has them (for tests). */
    InstanceLifecycle pods(String namespace, String revision) {
        return revisionPods(pas.getStore().getByKey(namespace + "/" + revision));
    }

    /** What one instance of a revision serves, as a tick reads it now, with the problems met reading it (for tests). */
    InstanceRate servingRate(String namespace, String revision, List<FieldError> problems) {
        return revisionKnobs.servingRate(pas.getStore().getByKey(namespace + "/" + revision), clusterConfig(), problems);
    }

    /** The revision's last decision and what it was decided from; null before its first (for tests). */
    Decided decided(String namespace, String revision) {
        PodAutoscaler pa = pas.getStore().getByKey(namespace + "/" + revision);
        Revision r = pa == null ? null : revisions.get(pa.getMetadata().getUid());
        return r == null ? null : r.decided;
    }

    /** Whether config-autoscaler is in the ConfigMap informer's store (for tests). */
    boolean clusterConfigSeen() {
        return !clusterConfigs.getStore().list().isEmpty();
    }

    private void reconcile(List<PodAutoscaler> mine, Instant now) {
        Map<String, List<CompletableFuture<StatScraper.Reading>>> scrapes = new HashMap<>();
        Map<String, InstanceLifecycle> pods = new HashMap<>();
        try (StatScraper.Round round = scraper.round()) {
            for (PodAutoscaler pa : mine) {
                InstanceLifecycle revisionPods = revisionPods(pa, revisions.get(pa.getMetadata().getUid()), now);
                pods.put(pa.getMetadata().getUid(), revisionPods);
                List<String> addresses = new ArrayList<>(revisionPods.scraped());
                Collections.shuffle(addresses);
                scrapes.put(pa.getMetadata().getUid(), round.scrape(addresses.subList(0, StatScraper.sampleSize(addresses.size()))));
            }
            KnativeAutoscalerConfig cluster = clusterConfig();
            for (PodAutoscaler pa : mine) {
                String uid = pa.getMetadata().getUid();
                try {
                    InstanceLifecycle revisionPods = pods.get(uid);
                    reconcile(pa, revisionPods, readings(pa, scrapes.get(uid), revisionPods, now), cluster, now);
                } catch (KubernetesClientException e) {
                    LOG.warnf("PodAutoscaler %s: %s (next tick retries)", pa.key(), e.getMessage());
                }
            }
        }
    }

    private void reconcile(PodAutoscaler pa, InstanceLifecycle pods, Readings read, KnativeAutoscalerConfig cluster, Instant now) {
        Revision r = revisions.computeIfAbsent(pa.getMetadata().getUid(), k -> new Revision());
        r.knobs = revisionKnobs.read(pa, r.knobs, cluster, clusterConfigVersion);
        Knobs knobs = r.knobs.knobs();
        Readings readings = ActivatorCap.capped(read, knobs);
        HistoryStore.Owner owner = new HistoryStore.Owner(pa.getMetadata().getUid(), pa.getMetadata().getNamespace(),
                pa.getMetadata().getName());
        if (r.scaler == null || !r.scaler.fits(knobs.policy())) {
            // A revision met for the first time takes up its stored history, if a former leader left one, and the scale
            // that leader asked (the status it wrote); one whose class or window changed keeps its own. Either way a
            // new window, the scale asked so far kept.
            Optional<LearnedHistory> learned = r.scaler == null ? history.restore(owner, now) : r.scaler.learned();
            int carried = r.scaler != null ? r.scaler.desired() : learned.isPresent() ? desiredInStatus(pa) : -1;
            r.scaler = RevisionScaler.of(knobs.policy(), lazyDefaults, carried, learned);
        }
        if (r.gauges == null) {
            r.gauges = new RevisionGauges(metrics, pa.getMetadata().getNamespace(), pa.getMetadata().getName());
        }
        r.gauges.ready.set(readings.readyPods());
        readings.rps().ifPresent(r.gauges.rate::set);
        RevisionScaler.Decision d = r.scaler.decide(readings, knobs, now);
        Optional<LearnedHistory> learned = r.scaler.learned();
        r.decided = new Decided(now, readings, knobs, d, learned);
        history.offer(owner, learned, now);
        if (d.desired() != r.lastDesired) {
            LOG.infof("%s: %d -> %d instances (%s)", pa.key(), Math.max(0, r.lastDesired), d.desired(), d.reason());
            if (r.lastDesired >= 0) {
                (d.desired() > r.lastDesired ? scaledUp : scaledDown).increment();
            }
            r.lastDesired = d.desired();
            r.gauges.desired.set(d.desired());
        }
        r.gauges.parked.set(d.parked());
        // Wakes first (they serve within a second), parking next; the Deployment keeps serving and parked pods alike.
        lifecycle.bring(pa.key(), pa.getMetadata().getNamespace(), r.pods, pods, d, now);
        if (d.instances() != r.applied) {
            writer.scale(pa, d.instances());
            r.applied = d.instances();
        }
        int initial = knobs.bounds().initial();
        r.initialized |= readings.readyPods() >= Math.max(1, initial) || (initial == 0 && d.desired() == 0);
        int activatorCount = cluster.activators(readings.readyPods(), knobs.totalPerPod(), knobs.burstCapacity());
        ServerlessService sks = writer.sks(Desired.sks(pa, d.desired() > 0, activatorCount), services.getStore().getByKey(pa.key()));
        String name = pa.getMetadata().getName();
        PaStatus status = new PaStatus(d.desired(), readings.readyPods(), name, name + "-private",
                d.desired() > 0 && readings.readyPods() > 0, r.initialized, sks == null ? null : sks.ready(),
                Optional.ofNullable(pa.getMetadata().getGeneration()).orElse(0L));
        writer.status(pa, status.build(pa.getStatus(), now));
    }

    /** The serving instances the PodAutoscaler's status asks for (a former leader's last word); -1 for none. */
    private static int desiredInStatus(PodAutoscaler pa) {
        return pa.getStatus() == null || pa.getStatus().desiredScale() == null ? -1 : Math.max(0, pa.getStatus().desiredScale());
    }

    /**
     * The tick's readings of a revision: its pods' answers, estimated for all the pods scraped (those that serve, and a
     * parked one left in the request path), the parked pods, and the activators' reports.
     */
    private Readings readings(PodAutoscaler pa, List<CompletableFuture<StatScraper.Reading>> scrapes, InstanceLifecycle pods,
            Instant now) {
        int ready = pods.scraped().size();
        // A pod without a sample (no answer, or one refused) is left out of the mean. The scrapes of every revision
        // started together and each completes by the scrape deadline, so these joins hold the tick no longer.
        double rps = 0;
        double concurrency = 0;
        int answered = 0;
        for (CompletableFuture<StatScraper.Reading> f : scrapes) {
            StatScraper.Reading r = f.join();
            if (r.rps().isPresent()) {
                rps += r.rps().getAsDouble();
                concurrency += r.concurrency().getAsDouble();
                answered++;
            }
        }
        ActivatorLoad.Load load = activators.of(pa.getMetadata().getNamespace(), pa.getMetadata().getName(), now);
        return new Readings(pods.servingCount(), pods.parkedCount(),
                answered == 0 ? OptionalDouble.empty() : OptionalDouble.of(rps / answered * ready),
                answered == 0 ? OptionalDouble.empty() : OptionalDouble.of(concurrency / answered * ready),
                load.rps(), load.concurrency());
    }

    /** config-autoscaler as the watch has it, parsed once per version; Knative's defaults without one. */
    private KnativeAutoscalerConfig clusterConfig() {
        ConfigMap cm = clusterConfigs.getStore().getByKey(config.knativeNamespace() + "/" + KnativeNames.CONFIG_AUTOSCALER);
        String version = cm == null ? null : cm.getMetadata().getResourceVersion();
        if (!java.util.Objects.equals(version, clusterConfigVersion)) {
            List<FieldError> problems = new ArrayList<>();
            clusterConfig = KnativeAutoscalerConfig.parse(cm == null ? Map.of() : cm.getData(), problems);
            problems.forEach(p -> LOG.warnf("%s/%s: %s (Knative's default kept)", config.knativeNamespace(),
                    KnativeNames.CONFIG_AUTOSCALER, p.message()));
            clusterConfigVersion = version;
        }
        return clusterConfig;
    }

    private InstanceLifecycle revisionPods(PodAutoscaler pa) {
        return new InstanceLifecycle(pods.getIndexer().byIndex(BY_REVISION, pa.key()).stream().map(PodLifecycle::instance).toList());
    }

    /** The revision's pods with this autoscaler's writes that the watch does not show yet. */
    private InstanceLifecycle revisionPods(PodAutoscaler pa, Revision r, Instant now) {
        InstanceLifecycle seen = revisionPods(pa);
        return r == null ? seen : lifecycle.seen(seen, r.pods, now);
    }
}
