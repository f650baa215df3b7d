package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.deviceplugin.kubelet.PodResourcesClient;
import io.dilu.kube.AssignedGpusPatch;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * The Kubernetes side of "which pod is this?": watches the pods of this node, asks the kubelet's
 * PodResources API who holds which share, and applies the {@link Reconciler}'s plan: owners and quotas to
 * {@link Allocations}, corrected {@code dilu.io/assigned-gpus} annotations to the API server. When the
 * kubelet does not answer, nothing changes; when the API server does not, shares keep their quotas and the
 * annotations wait.
 */
public final class PodIdentity implements NodePods, AutoCloseable {

    private static final Logger LOG = Logger.getLogger(PodIdentity.class);

    private final KubernetesClient kubernetes;
    private final String nodeName;
    private final PodResourcesClient kubelet;
    private final InstantSource clock;
    private final Duration grace;
    private final SharedIndexInformer<Pod> informer;
    private final SharedIndexInformer<Namespace> namespaces;
    private final Counter annotationMissing;
    private final Counter annotationDifferent;
    private final Counter guessCorrected;
    private final Counter kubeletFailures;

    public PodIdentity(KubernetesClient kubernetes, String nodeName, PodResourcesClient kubelet,
            InstantSource clock, Duration grace, MeterRegistry metrics) {
        this.kubernetes = kubernetes;
        this.nodeName = nodeName;
        this.kubelet = kubelet;
        this.clock = clock;
        this.grace = grace;
        this.informer = kubernetes.pods().inAnyNamespace().withField("spec.nodeName", nodeName).runnableInformer(0);
        // Keep trying while the API server is away: the agent must never give up watching its pods.
        informer.exceptionHandler((started, t) -> {
            LOG.debugf("pod watch of node %s failed, retrying: %s", nodeName, t.getMessage());
            return true;
        });
        // Namespaces carry the right to SLO priority and quotas above the defaults (QuotaRights); pods from a
        // namespace not seen yet get the defaults until it is.
        this.namespaces = kubernetes.namespaces().runnableInformer(0);
        namespaces.exceptionHandler((started, t) -> {
            LOG.debugf("namespace watch failed, retrying: %s", t.getMessage());
            return true;
        });
        Counters counters = counters(metrics);
        this.annotationMissing = counters.annotationMissing();
        this.annotationDifferent = counters.annotationDifferent();
        this.guessCorrected = counters.guessCorrected();
        this.kubeletFailures = counters.kubeletFailures();
    }

    /** The counters of the matching protocol. */
    record Counters(Counter annotationMissing, Counter annotationDifferent, Counter guessCorrected,
            Counter kubeletFailures) {}

    /**
     * Registers (or finds) the protocol's counters: the agent exports them from its start, at 0, also with
     * matching off, so that a query or alert on them never finds the series missing.
     */
    static Counters counters(MeterRegistry metrics) {
        String mismatches = "dilu_assignment_mismatches_total";
        String help = "assignments the node corrected: a pod annotation missing or naming another GPU than its "
                + "containers hold, or a share matched to another container at Allocate than the kubelet reports";
        return new Counters(
                Counter.builder(mismatches).tag("kind", "annotation-missing").description(help).register(metrics),
                Counter.builder(mismatches).tag("kind", "annotation-different").description(help).register(metrics),
                Counter.builder(mismatches).tag("kind", "allocate-guess").description(help).register(metrics),
                Counter.builder("dilu_podresources_failures_total")
                        .description("PodResources List calls the kubelet did not answer").register(metrics));
    }

    /**
     * Tells {@code parking} at once whenever a pod of this node is parked or no longer parked ({@code dilu.io/parked}),
     * from the watch's events: the 2 s reconcile would leave a parked pod its guarantee, or a woken one without it, for
     * up to a round. Pods already watched are told as the handler is added.
     */
    public void watchParking(BiConsumer<ContainerRef.PodKey, Boolean> parking) {
        informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                tell(pod, parking);
            }

            @Override
            public void onUpdate(Pod before, Pod after) {
                tell(after, parking);
            }

            @Override
            public void onDelete(Pod pod, boolean unknownFinalState) {
                // As it was last seen: a parked pod deleted at once (grace 0) may still run on this node until the
                // kubelet ends it, and must not get its guarantee back meanwhile (issue 45: 7 ms after the deletion).
                tell(pod, parking);
            }
        });
    }

    private static void tell(Pod pod, BiConsumer<ContainerRef.PodKey, Boolean> parking) {
        Map<String, String> a = pod.getMetadata().getAnnotations();
        parking.accept(new ContainerRef.PodKey(pod.getMetadata().getNamespace(), pod.getMetadata().getName()),
                a != null && a.containsKey(DiluNames.PARKED) && !PodShares.terminal(pod));
    }

    public void start() {
        for (SharedIndexInformer<?> i : List.of(informer, namespaces)) {
            i.start().whenComplete((ok, t) -> {
                if (t != null) {
                    LOG.warnf("watch not started yet: %s (retrying)", t.getMessage());
                }
            });
        }
    }

    @Override
    public Collection<PodView> seen() {
        return views(informer.getStore().list());
    }

    @Override
    public Collection<PodView> read() {
        try {
            return views(kubernetes.pods().inAnyNamespace().withField("spec.nodeName", nodeName).list().getItems());
        } catch (KubernetesClientException e) {
            LOG.debugf("cannot read the pods of node %s, using the watch's: %s", nodeName, e.getMessage());
            return seen();
        }
    }

    private List<PodView> views(List<Pod> pods) {
        return pods.stream().map(p -> {
            Namespace ns = namespaces.getStore().getByKey(p.getMetadata().getNamespace());
            return PodViews.of(p, ns == null ? null : ns.getMetadata().getLabels());
        }).toList();
    }

    /** One round: read the kubelet, decide, apply to {@code allocations}. Safe to call from one thread at a time. */
    public void reconcile(Allocations allocations) {
        Map<ContainerRef, java.util.Set<String>> listing;
        try {
            listing = kubelet.list(DiluNames.GPU_SM);
        } catch (StatusRuntimeException e) {
            kubeletFailures.increment();
            LOG.debugf("PodResources List failed, changing nothing: %s", e.getStatus());
            return;
        }
        Map<ContainerRef.PodKey, PodView> pods = seen().stream()
                .collect(Collectors.toMap(PodView::key, Function.identity(), (a, b) -> a));
        List<Reconciler.Change> plan = Reconciler.plan(allocations.all().values(), listing, pods, clock.instant(), grace,
                allocations.nodeThreshold());
        allocations.apply(plan);
        for (Reconciler.Change change : plan) {
            if (change instanceof Reconciler.Bind b && b.corrected()) {
                guessCorrected.increment();
            } else if (change instanceof Reconciler.CorrectAnnotation c && annotate(c, pods.get(c.pod()))) {
                (c.reason() == Reconciler.Mismatch.MISSING ? annotationMissing : annotationDifferent).increment();
            }
        }
    }

    private boolean annotate(Reconciler.CorrectAnnotation c, PodView pod) {
        try {
            kubernetes.pods().inNamespace(c.pod().namespace()).withName(c.pod().name()).patch(PatchContext.of(PatchType.JSON),
                    AssignedGpusPatch.json(c.uid(), !pod.annotations().isEmpty(), AssignedGpus.parse(c.actual())));
            LOG.infof("pod %s/%s: %s %s (the node's truth; was %s)", c.pod().namespace(), c.pod().name(),
                    DiluNames.ASSIGNED_GPUS, c.actual(), pod.annotations().getOrDefault(DiluNames.ASSIGNED_GPUS, "unset"));
            return true;
        } catch (KubernetesClientException e) {
            LOG.warnf("cannot correct %s on pod %s/%s (next round retries): %s", DiluNames.ASSIGNED_GPUS,
                    c.pod().namespace(), c.pod().name(), e.getMessage());
            return false;
        }
    }

    @Override
    public void close() {
        informer.close();
        namespaces.close();
    }
}
