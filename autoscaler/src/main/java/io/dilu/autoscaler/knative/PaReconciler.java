package io.dilu.autoscaler.knative;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.decide.ActivatorCap;
import io.dilu.autoscaler.decide.ServingRate;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.Readings;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.core.scaling.ScalingParameters;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSettings;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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

    /** A revision's knobs as last read, and the versions they were read from: read again only when one changes. */
    private record KnobsRead(String paVersion, String clusterVersion, long profilesVersion, Knobs knobs) {}

    /** What the reconciler remembers of one revision between ticks. */
    private static final class Revision {
        RevisionScaler scaler;
        KnobsRead knobs;
        /** The scale last written to the target; -1 before the first. */
        int applied = -1;
        boolean initialized;
        final AtomicInteger desiredGauge = new AtomicInteger();
        final AtomicInteger readyGauge = new AtomicInteger();
        /** The request rate last measured (pods' own and the activators'), for operators. */
        final AtomicReference<Double> rateGauge = new AtomicReference<>(0.0);
        List<Meter> meters = List.of();
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
    private final Map<String, Revision> revisions = new ConcurrentHashMap<>();
    private final MeterRegistry metrics;
    private final Counter scaledUp;
    private final Counter scaledDown;
    private String clusterConfigVersion;
    private KnativeAutoscalerConfig clusterConfig = KnativeAutoscalerConfig.DEFAULTS;
    /** Counts the profile watch's events: a revision's serving rate may come from any profile of its namespace. */
    private final AtomicLong profilesVersion = new AtomicLong();

    public PaReconciler(KubernetesClient client, AutoscalerConfig config, StatScraper scraper, InstantSource clock,
            MeterRegistry metrics, PaWriter writer, ActivatorLoad activators) {
        this.config = config;
        this.scraper = scraper;
        this.clock = clock;
        this.metrics = metrics;
        this.writer = writer;
        this.activators = activators;
        this.lazyDefaults = new ScalingParameters(config.windowSamples(), config.phiOut(), config.phiIn(), 0, 1000,
                ScalingParameters.burstWindowFor(config.windowSamples()));
        this.classes = config.mode() == AutoscalerConfig.Mode.REPLACE ? Set.of(config.paClass(), Knative.KPA_CLASS)
                : Set.of(config.paClass());
        this.scaledUp = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "up")
                .description("changes of a revision's desired scale").register(metrics);
        this.scaledDown = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "down")
                .description("changes of a revision's desired scale").register(metrics);
        this.pas = client.resources(PodAutoscaler.class).inAnyNamespace().runnableInformer(0);
        this.pods = client.pods().inAnyNamespace().withLabel(Knative.REVISION_LABEL).runnableInformer(0);
        // Every tick asks for one revision's pods: an index keeps that from walking every pod of the cluster.
        pods.addIndexers(Map.of(BY_REVISION, p -> List.of(p.getMetadata().getNamespace() + "/"
                + p.getMetadata().getLabels().get(Knative.REVISION_LABEL))));
        // ServerlessServices are watched, not fetched: a tick makes no API call for a revision that is in line.
        this.services = client.resources(ServerlessService.class).inAnyNamespace().runnableInformer(0);
        this.profiles = client.resources(GpuFunctionProfile.class).inAnyNamespace().runnableInformer(0);
        profiles.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(GpuFunctionProfile p) {
                profilesVersion.incrementAndGet();
            }

            @Override
            public void onUpdate(GpuFunctionProfile before, GpuFunctionProfile after) {
                profilesVersion.incrementAndGet();
            }

            @Override
            public void onDelete(GpuFunctionProfile p, boolean unknownFinalState) {
                profilesVersion.incrementAndGet();
            }
        });
        this.clusterConfigs = client.configMaps().inNamespace(config.knativeNamespace())
                .withField("metadata.name", KnativeAutoscalerConfig.CONFIG_MAP).runnableInformer(0);
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
        try {
            CompletableFuture.allOf(synced).get(SYNC_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            LOG.warnf("PodAutoscalers, pods or ServerlessServices not listed yet (%s): the first ticks may see fewer", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public void close() {
        List.of(pas, pods, services, profiles, clusterConfigs).forEach(SharedIndexInformer::close);
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
            e.getValue().meters.forEach(metrics::remove); // a revision that went takes its gauges along
            return true;
        });
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

    /** Ready pods of a revision as the pod informer has them (for tests). */
    int readyPods(String namespace, String revision) {
        PodAutoscaler pa = pas.getStore().getByKey(namespace + "/" + revision);
        return pa == null ? 0 : readyAddresses(pa).size();
    }

    /** What one instance of a revision serves, as a tick reads it now, with the problems met reading it (for tests). */
    InstanceRate servingRate(String namespace, String revision, List<FieldError> problems) {
        return servingRate(pas.getStore().getByKey(namespace + "/" + revision), problems);
    }

    /** Whether config-autoscaler is in the ConfigMap informer's store (for tests). */
    boolean clusterConfigSeen() {
        return !clusterConfigs.getStore().list().isEmpty();
    }

    private void reconcile(List<PodAutoscaler> mine, Instant now) {
        Map<String, List<CompletableFuture<StatScraper.Reading>>> scrapes = new HashMap<>();
        Map<String, Integer> ready = new HashMap<>();
        try (StatScraper.Round round = scraper.round()) {
            for (PodAutoscaler pa : mine) {
                List<String> addresses = new ArrayList<>(readyAddresses(pa));
                ready.put(pa.getMetadata().getUid(), addresses.size());
                Collections.shuffle(addresses);
                scrapes.put(pa.getMetadata().getUid(), round.scrape(addresses.subList(0, StatScraper.sampleSize(addresses.size()))));
            }
            KnativeAutoscalerConfig cluster = clusterConfig();
            for (PodAutoscaler pa : mine) {
                String uid = pa.getMetadata().getUid();
                try {
                    reconcile(pa, readings(pa, scrapes.get(uid), ready.get(uid), now), cluster, now);
                } catch (KubernetesClientException e) {
                    LOG.warnf("PodAutoscaler %s: %s (next tick retries)", pa.key(), e.getMessage());
                }
            }
        }
    }

    private void reconcile(PodAutoscaler pa, Readings read, KnativeAutoscalerConfig cluster, Instant now) {
        Revision r = revisions.computeIfAbsent(pa.getMetadata().getUid(), k -> new Revision());
        Knobs knobs = knobs(pa, r, cluster);
        Readings readings = ActivatorCap.capped(read, knobs);
        if (r.scaler == null || !r.scaler.fits(knobs.policy())) {
            // A new revision, or one whose class or window changed: a new window, the scale asked so far kept.
            r.scaler = RevisionScaler.of(knobs.policy(), lazyDefaults, r.scaler == null ? -1 : r.scaler.desired());
        }
        if (r.meters.isEmpty()) {
            Tags tags = Tags.of("namespace", pa.getMetadata().getNamespace(), "revision", pa.getMetadata().getName());
            r.meters = List.of(
                    Gauge.builder("dilu_autoscaler_desired_pods", r.desiredGauge, AtomicInteger::get).tags(tags)
                            .description("instances the autoscaler asks for").register(metrics),
                    Gauge.builder("dilu_autoscaler_ready_pods", r.readyGauge, AtomicInteger::get).tags(tags)
                            .description("ready instances it sees").register(metrics),
                    Gauge.builder("dilu_autoscaler_requests_per_second", r.rateGauge, AtomicReference::get).tags(tags)
                            .description("the revision's request rate as last measured: what its pods served themselves "
                                    + "and what the activators held").register(metrics));
        }
        r.readyGauge.set(readings.readyPods());
        readings.rps().ifPresent(r.rateGauge::set);
        RevisionScaler.Decision d = r.scaler.decide(readings, knobs, now);
        if (d.desired() != r.applied) {
            LOG.infof("%s: %d -> %d instances (%s)", pa.key(), Math.max(0, r.applied), d.desired(), d.reason());
            writer.scale(pa, d.desired());
            if (r.applied >= 0) {
                (d.desired() > r.applied ? scaledUp : scaledDown).increment();
            }
            r.applied = d.desired();
            r.desiredGauge.set(d.desired());
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

    /**
     * The revision's knobs, read from its annotations, the cluster's config-autoscaler and its profile only when one of
     * them changed since the last read (a tick reads every revision; reading them every second cost as much as the
     * decision, and logged the same malformed annotation every second). Problems are logged once per read.
     */
    private Knobs knobs(PodAutoscaler pa, Revision r, KnativeAutoscalerConfig cluster) {
        String paVersion = pa.getMetadata().getResourceVersion();
        long profilesSeen = profilesVersion.get();
        KnobsRead read = r.knobs;
        if (read == null || !java.util.Objects.equals(read.paVersion(), paVersion)
                || !java.util.Objects.equals(read.clusterVersion(), clusterConfigVersion) || read.profilesVersion() != profilesSeen) {
            List<FieldError> problems = new ArrayList<>();
            read = new KnobsRead(paVersion, clusterConfigVersion, profilesSeen, knobs(pa, cluster, problems));
            problems.forEach(p -> LOG.warnf("PodAutoscaler %s: %s", pa.key(), p.message()));
            r.knobs = read;
        }
        return read.knobs();
    }

    private Knobs knobs(PodAutoscaler pa, KnativeAutoscalerConfig cluster, List<FieldError> problems) {
        boolean toZero = config.enableScaleToZero()
                .orElse(config.mode() == AutoscalerConfig.Mode.REPLACE && cluster.enableScaleToZero());
        if (Knative.KPA_CLASS.equals(pa.paClass()) && !Knative.KPA_CLASS.equals(config.paClass())) {
            long cc = pa.getSpec() == null || pa.getSpec().containerConcurrency() == null ? 0 : pa.getSpec().containerConcurrency();
            return Knobs.kpa(pa.annotations(), Math.max(0, cc), cluster, toZero, problems);
        }
        return Knobs.lazy(pa.annotations(), cluster, config.windowSamples(), servingRate(pa, problems), toZero,
                config.parking(), problems);
    }

    /** The tick's readings of a revision: its pods' answers, estimated for all ready pods, and the activators' reports. */
    private Readings readings(PodAutoscaler pa, List<CompletableFuture<StatScraper.Reading>> scrapes, int ready, Instant now) {
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
        return new Readings(ready, 0, answered == 0 ? OptionalDouble.empty() : OptionalDouble.of(rps / answered * ready),
                answered == 0 ? OptionalDouble.empty() : OptionalDouble.of(concurrency / answered * ready),
                load.rps(), load.concurrency());
    }

    /** config-autoscaler as the watch has it, parsed once per version; Knative's defaults without one. */
    private KnativeAutoscalerConfig clusterConfig() {
        ConfigMap cm = clusterConfigs.getStore().getByKey(config.knativeNamespace() + "/" + KnativeAutoscalerConfig.CONFIG_MAP);
        String version = cm == null ? null : cm.getMetadata().getResourceVersion();
        if (!java.util.Objects.equals(version, clusterConfigVersion)) {
            List<FieldError> problems = new ArrayList<>();
            clusterConfig = KnativeAutoscalerConfig.parse(cm == null ? Map.of() : cm.getData(), problems);
            problems.forEach(p -> LOG.warnf("%s/%s: %s (Knative's default kept)", config.knativeNamespace(),
                    KnativeAutoscalerConfig.CONFIG_MAP, p.message()));
            clusterConfigVersion = version;
        }
        return clusterConfig;
    }

    private List<String> readyAddresses(PodAutoscaler pa) {
        return pods.getIndexer().byIndex(BY_REVISION, pa.key()).stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null && p.getStatus() != null
                        && p.getStatus().getPodIP() != null && p.getStatus().getConditions().stream()
                        .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus())))
                .map(p -> p.getStatus().getPodIP()).toList();
    }

    private InstanceRate servingRate(PodAutoscaler pa, List<FieldError> problems) {
        String ns = pa.getMetadata().getNamespace();
        return ServingRate.of(pa.annotations(), pa.labels(),
                name -> Optional.ofNullable(profiles.getStore().getByKey(ns + "/" + name)).flatMap(p -> settings(p, problems)),
                function -> profiles.getStore().list().stream().filter(p -> ns.equals(p.getMetadata().getNamespace()))
                        .filter(p -> p.getSpec() != null && function.equals(p.getSpec().function())).findFirst()
                        .flatMap(p -> settings(p, problems)),
                config.defaultServingRps(), problems);
    }

    /** A profile's settings; a value it refuses is reported with the profile's name. */
    private static Optional<ProfileSettings> settings(GpuFunctionProfile p, List<FieldError> problems) {
        List<FieldError> own = new ArrayList<>();
        Optional<ProfileSettings> s = p.settings(own);
        own.forEach(e -> problems.add(new FieldError("GpuFunctionProfile " + p.getMetadata().getName() + " " + e.field(),
                e.value(), e.allowed())));
        return s;
    }
}
