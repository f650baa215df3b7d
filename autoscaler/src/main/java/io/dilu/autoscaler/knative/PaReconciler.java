package io.dilu.autoscaler.knative;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.decide.ServingRate;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.RateWindow;
import io.dilu.core.scaling.ScaleBounds;
import io.dilu.core.scaling.ScaleDownDelay;
import io.dilu.core.scaling.ScalingAnnotations;
import io.dilu.core.scaling.ScalingParameters;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * Plays Knative's autoscaler for PodAutoscalers of class {@code co-scaling.dilu.io}: every tick it scrapes the
 * revision's ready pods, adds the request rate to the function's window, asks {@link Autoscale} for a scale,
 * scales the target through its {@code scale} subresource, keeps the ServerlessService (Serve while instances
 * run, Proxy at zero) and writes the PodAutoscaler's status. PodAutoscalers of other classes are not touched.
 */
public final class PaReconciler {

    private static final Logger LOG = Logger.getLogger(PaReconciler.class);

    /** What the reconciler remembers of one revision between ticks. */
    private static final class Function {
        final RateWindow window;
        final ScaleDownDelay delay = new ScaleDownDelay();
        /** What the gauges read: the scale asked for, and the ready pods seen. */
        AtomicInteger desiredGauge = new AtomicInteger();
        AtomicInteger readyGauge = new AtomicInteger();
        List<Meter> meters = List.of();
        int desired = -1;
        Optional<Instant> zeroWantedSince = Optional.empty();
        boolean initialized;
        Map<String, Object> lastStatus = Map.of();

        Function(int samples) {
            window = new RateWindow(samples);
        }
    }

    private final KubernetesClient client;
    private final AutoscalerConfig config;
    private final StatScraper scraper;
    private final InstantSource clock;
    private final ScalingParameters params;
    private final SharedIndexInformer<GenericKubernetesResource> pas;
    private final SharedIndexInformer<Pod> pods;
    private final SharedIndexInformer<GpuFunctionProfile> profiles;
    private final SharedIndexInformer<GenericKubernetesResource> services;
    static final String BY_REVISION = "revision";
    private final Map<String, Function> functions = new ConcurrentHashMap<>();
    private final MeterRegistry metrics;
    private final Counter scaledUp;
    private final Counter scaledDown;

    public PaReconciler(KubernetesClient client, AutoscalerConfig config, StatScraper scraper, InstantSource clock,
            MeterRegistry metrics) {
        this.metrics = metrics;
        this.scaledUp = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "up")
                .description("changes of a revision's desired scale").register(metrics);
        this.scaledDown = Counter.builder("dilu_autoscaler_scale_decisions_total").tag("direction", "down")
                .description("changes of a revision's desired scale").register(metrics);
        this.client = client;
        this.config = config;
        this.scraper = scraper;
        this.clock = clock;
        this.params = new ScalingParameters(config.windowSamples(), config.phiOut(), config.phiIn(), 0, 1000);
        this.pas = client.genericKubernetesResources(Knative.PODAUTOSCALER).inAnyNamespace().runnableInformer(0);
        this.pods = client.pods().inAnyNamespace().withLabel(Knative.REVISION_LABEL).runnableInformer(0);
        // Every tick asks for one revision's pods: an index keeps that from walking every pod of the cluster.
        pods.addIndexers(Map.of(BY_REVISION, p -> List.of(p.getMetadata().getNamespace() + "/"
                + p.getMetadata().getLabels().get(Knative.REVISION_LABEL))));
        // ServerlessServices are watched, not fetched: a tick makes no API call for a revision that is in line.
        this.services = client.genericKubernetesResources(Knative.SERVERLESSSERVICE).inAnyNamespace().runnableInformer(0);
        this.profiles = client.resources(GpuFunctionProfile.class).inAnyNamespace().runnableInformer(0);
        pas.exceptionHandler((started, t) -> true);
        pods.exceptionHandler((started, t) -> true);
        profiles.exceptionHandler((started, t) -> true);
        services.exceptionHandler((started, t) -> true);
    }

    public void start() {
        pas.start();
        pods.start();
        profiles.start();
        services.start();
    }

    public void close() {
        pas.close();
        pods.close();
        profiles.close();
        services.close();
    }

    boolean ours(GenericKubernetesResource pa) {
        Map<String, String> a = pa.getMetadata().getAnnotations();
        return a != null && config.paClass().equals(a.get(Knative.CLASS));
    }

    /**
     * One tick over every PodAutoscaler of our class; the scrapes of all revisions run at once, in one round
     * that the tick closes (which drops every connection when some pod failed).
     */
    public void tick() {
        Instant now = clock.instant();
        List<GenericKubernetesResource> mine = pas.getStore().list().stream().filter(this::ours).toList();
        Map<String, List<CompletableFuture<StatScraper.Reading>>> readings = new HashMap<>();
        Map<String, Integer> readyPods = new HashMap<>();
        try (StatScraper.Round round = scraper.round()) {
            for (GenericKubernetesResource pa : mine) {
                List<String> addresses = readyAddresses(pa);
                readyPods.put(pa.getMetadata().getUid(), addresses.size());
                List<String> sample = new ArrayList<>(addresses);
                Collections.shuffle(sample);
                readings.put(pa.getMetadata().getUid(), round.scrape(sample.subList(0, StatScraper.sampleSize(sample.size()))));
            }
            for (GenericKubernetesResource pa : mine) {
                String uid = pa.getMetadata().getUid();
                try {
                    reconcile(pa, readings.get(uid), readyPods.get(uid), now);
                } catch (KubernetesClientException e) {
                    LOG.warnf("PodAutoscaler %s/%s: %s (next tick retries)", pa.getMetadata().getNamespace(),
                            pa.getMetadata().getName(), e.getMessage());
                }
            }
        }
        Set<String> live = mine.stream().map(p -> p.getMetadata().getUid()).collect(Collectors.toSet());
        functions.entrySet().removeIf(e -> {
            if (live.contains(e.getKey())) {
                return false;
            }
            e.getValue().meters.forEach(metrics::remove); // a revision that went takes its gauges along
            return true;
        });
    }

    private List<String> readyAddresses(GenericKubernetesResource pa) {
        String ns = pa.getMetadata().getNamespace();
        String revision = pa.getMetadata().getName();
        return pods.getIndexer().byIndex(BY_REVISION, ns + "/" + revision).stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null && p.getStatus() != null
                        && p.getStatus().getPodIP() != null && p.getStatus().getConditions().stream()
                        .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus())))
                .map(p -> p.getStatus().getPodIP()).toList();
    }

    private void reconcile(GenericKubernetesResource pa, List<CompletableFuture<StatScraper.Reading>> readings, int ready,
            Instant now) {
        Map<String, String> annotations = pa.getMetadata().getAnnotations();
        List<FieldError> problems = new ArrayList<>();
        ScaleBounds bounds = ScaleBounds.of(annotations, problems);
        ScalingAnnotations knobs = ScalingAnnotations.of(annotations, problems);
        int windowSeconds = knobs.windowSeconds().orElse(config.windowSamples());
        // A revision whose window changed starts a window of the new length (its samples so far are dropped).
        Function f = functions.compute(pa.getMetadata().getUid(),
                (k, old) -> old != null && old.window.size() == windowSeconds ? old : carry(old, new Function(windowSeconds)));
        if (f.meters.isEmpty()) {
            Tags tags = Tags.of("namespace", pa.getMetadata().getNamespace(), "revision", pa.getMetadata().getName());
            f.meters = List.of(
                    Gauge.builder("dilu_autoscaler_desired_pods", f.desiredGauge, AtomicInteger::get).tags(tags)
                            .description("instances the autoscaler asks for").register(metrics),
                    Gauge.builder("dilu_autoscaler_ready_pods", f.readyGauge, AtomicInteger::get).tags(tags)
                            .description("ready instances it sees").register(metrics));
        }
        f.readyGauge.set(ready);
        // A pod without a sample (no answer, or one refused) is left out of the mean; if no pod gave one the
        // second has no sample at all. The scrapes of every revision started together and each completes by
        // the scrape deadline (a straggler's exchange cancelled), so these joins hold the tick no longer.
        double sum = 0;
        int answered = 0;
        for (CompletableFuture<StatScraper.Reading> r : readings) {
            OptionalDouble rps = r.join().rps();
            if (rps.isPresent()) {
                sum += rps.getAsDouble();
                answered++;
            }
        }
        if (answered > 0) {
            f.window.record(now, sum / answered * ready);
        } else if (ready == 0) {
            f.window.record(now, 0);
        }

        double servingRps = servingRps(pa, problems);
        problems.forEach(p -> LOG.warnf("PodAutoscaler %s: %s", pa.getMetadata().getName(), p.message()));
        // Knative's retention period is the least time the last pod stays once zero is wanted: the longer of it and the grace.
        Duration grace = knobs.retention().compareTo(config.scaleToZeroGrace()) > 0 ? knobs.retention() : config.scaleToZeroGrace();
        Autoscale.Output decided = Autoscale.decide(params.withWindow(windowSeconds), new Autoscale.Input(f.window.samples(now),
                f.desired, servingRps, bounds, config.enableScaleToZero(), grace, f.zeroWantedSince, now));
        Autoscale.Output out = new Autoscale.Output(f.delay.apply(now, decided.desired(), knobs.scaleDownDelay()),
                decided.reason(), decided.zeroWantedSince());
        f.zeroWantedSince = out.zeroWantedSince();
        Map<String, Object> ref = spec(pa, "scaleTargetRef");
        if (out.desired() != f.desired) {
            LOG.infof("%s/%s: %d -> %d instances (%s)", pa.getMetadata().getNamespace(), pa.getMetadata().getName(),
                    Math.max(0, f.desired), out.desired(), out.reason());
            scaleTarget(pa.getMetadata().getNamespace(), ref, out.desired());
            if (f.desired >= 0) {
                (out.desired() > f.desired ? scaledUp : scaledDown).increment();
            }
            f.desired = out.desired();
            f.desiredGauge.set(out.desired());
        }
        f.initialized |= ready >= Math.max(1, bounds.initial()) || (bounds.initial() == 0 && out.desired() == 0);
        Optional<GenericKubernetesResource> sks = ensureSks(pa, out.desired() > 0 ? "Serve" : "Proxy");
        writeStatus(pa, f, new PaStatus(out.desired(), ready, pa.getMetadata().getName(),
                pa.getMetadata().getName() + "-private", out.desired() > 0 && ready > 0, f.initialized,
                sks.map(PaReconciler::sksReady).orElse(null), Optional.ofNullable(pa.getMetadata().getGeneration()).orElse(0L)), now);
    }

    /** A revision's state carried into a window of another length: what it asked for and its timers. */
    private static Function carry(Function old, Function fresh) {
        if (old != null) {
            fresh.desired = old.desired;
            fresh.zeroWantedSince = old.zeroWantedSince;
            fresh.initialized = old.initialized;
            fresh.lastStatus = old.lastStatus;
            fresh.desiredGauge = old.desiredGauge; // the registered gauges read these
            fresh.readyGauge = old.readyGauge;
            fresh.meters = old.meters;
        }
        return fresh;
    }

    private double servingRps(GenericKubernetesResource pa, List<FieldError> problems) {
        String ns = pa.getMetadata().getNamespace();
        Map<String, String> labels = pa.getMetadata().getLabels() == null ? Map.of() : pa.getMetadata().getLabels();
        Map<String, String> annotations = pa.getMetadata().getAnnotations() == null ? Map.of() : pa.getMetadata().getAnnotations();
        return ServingRate.of(annotations, labels,
                name -> Optional.ofNullable(profiles.getStore().getByKey(ns + "/" + name)).flatMap(GpuFunctionProfile::settings),
                function -> profiles.getStore().list().stream().filter(p -> ns.equals(p.getMetadata().getNamespace()))
                        .filter(p -> p.getSpec() != null && function.equals(p.getSpec().function())).findFirst()
                        .flatMap(GpuFunctionProfile::settings),
                config.defaultServingRps(), problems).rps();
    }

    /** A field of the spec as a map; the whole spec when {@code field} is null. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> spec(GenericKubernetesResource r, String field) {
        Object spec = r.getAdditionalProperties().get("spec");
        Object value = field == null ? spec : spec instanceof Map<?, ?> m ? m.get(field) : null;
        return value instanceof Map<?, ?> v ? (Map<String, Object>) v : Map.of();
    }

    private void scaleTarget(String namespace, Map<String, Object> ref, int replicas) {
        String name = String.valueOf(ref.get("name"));
        String kind = String.valueOf(ref.getOrDefault("kind", "Deployment"));
        if (!"Deployment".equals(kind)) {
            LOG.warnf("scale target %s %s is not a Deployment; not scaled", kind, name);
            return;
        }
        client.apps().deployments().inNamespace(namespace).withName(name).scale(replicas);
    }

    /** The ServerlessService of the revision, created (owned by the PodAutoscaler) or moved to the right mode. */
    private Optional<GenericKubernetesResource> ensureSks(GenericKubernetesResource pa, String mode) {
        var sksApi = client.genericKubernetesResources(Knative.SERVERLESSSERVICE).inNamespace(pa.getMetadata().getNamespace());
        GenericKubernetesResource sks = services.getStore().getByKey(pa.getMetadata().getNamespace() + "/" + pa.getMetadata().getName());
        Object paSpec = pa.getAdditionalProperties().get("spec");
        String protocolType = paSpec instanceof Map<?, ?> m && m.get("protocolType") != null ? String.valueOf(m.get("protocolType")) : "http1";
        Map<String, Object> spec = new HashMap<>();
        spec.put("mode", mode);
        spec.put("numActivators", 2);
        spec.put("protocolType", protocolType);
        spec.put("objectRef", spec(pa, "scaleTargetRef"));
        if (sks == null) {
            GenericKubernetesResource created = new GenericKubernetesResourceBuilder()
                    .withApiVersion("networking.internal.knative.dev/v1alpha1").withKind("ServerlessService")
                    .withNewMetadata().withName(pa.getMetadata().getName()).withNamespace(pa.getMetadata().getNamespace())
                    .withLabels(pa.getMetadata().getLabels()).withOwnerReferences(new OwnerReferenceBuilder()
                            .withApiVersion(pa.getApiVersion()).withKind("PodAutoscaler").withName(pa.getMetadata().getName())
                            .withUid(pa.getMetadata().getUid()).withController(true).withBlockOwnerDeletion(true).build())
                    .endMetadata().addToAdditionalProperties("spec", spec).build();
            try {
                return Optional.of(sksApi.resource(created).create());
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
                // Created a moment ago and not in the watch yet.
                return Optional.ofNullable(sksApi.withName(pa.getMetadata().getName()).get());
            }
        }
        if (!spec.equals(sks.getAdditionalProperties().get("spec"))) {
            sks.getAdditionalProperties().put("spec", spec);
            return Optional.of(sksApi.resource(sks).update());
        }
        return Optional.of(sks);
    }

    private static Boolean sksReady(GenericKubernetesResource sks) {
        Object status = sks.getAdditionalProperties().get("status");
        if (status instanceof Map<?, ?> s && s.get("conditions") instanceof List<?> conditions) {
            for (Object o : conditions) {
                if (o instanceof Map<?, ?> c && "Ready".equals(c.get("type"))) {
                    return "True".equals(c.get("status")) ? Boolean.TRUE : "False".equals(c.get("status")) ? Boolean.FALSE : null;
                }
            }
        }
        return null;
    }

    /** Writes the status when it changed, retrying on a conflict with a fresh copy. */
    private void writeStatus(GenericKubernetesResource pa, Function f, PaStatus status, Instant now) {
        var api = client.genericKubernetesResources(Knative.PODAUTOSCALER).inNamespace(pa.getMetadata().getNamespace());
        for (int attempt = 0; attempt < 3; attempt++) {
            GenericKubernetesResource current = attempt == 0 ? pa : api.withName(pa.getMetadata().getName()).get();
            if (current == null) {
                return;
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> previous = current.getAdditionalProperties().get("status") instanceof Map<?, ?> m
                    ? (Map<String, Object>) m : Map.of();
            Map<String, Object> next = status.toMap(previous, now);
            if (next.equals(previous)) {
                return;
            }
            current.getAdditionalProperties().put("status", next);
            try {
                api.resource(current).updateStatus();
                f.lastStatus = next;
                return;
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
            }
        }
    }
}
