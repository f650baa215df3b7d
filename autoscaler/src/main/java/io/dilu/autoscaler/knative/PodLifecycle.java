package io.dilu.autoscaler.knative;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.UnseenWrites;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * The Kubernetes side of core's {@link InstanceLifecycle}: reads a revision's pods as instances ({@link #instance}),
 * with the writes the watch does not show yet, and carries a plan's intents out as pod writes ({@link PaWriter}), in
 * the plan's order. Nothing here decides: which pod parks, wakes or goes is the plan's. Each write that fails is
 * logged, the pod's later writes are not made, and the next tick plans again from what the pods then say.
 */
final class PodLifecycle {

    private static final Logger LOG = Logger.getLogger(PodLifecycle.class);
    /** How long a park or wake written is believed over a watch that does not show it yet. */
    static final Duration WRITE_LAG = Duration.ofSeconds(10);

    /** What is kept of one revision's pods between ticks: the wakes asked, and the writes the watch may not show. */
    static final class Tracked {
        /** Pods asked to wake, by UID, and when: counted woken once they serve. */
        private final Map<String, Instant> waking = new HashMap<>();
        private final UnseenWrites written = new UnseenWrites(WRITE_LAG);
    }

    private final PaWriter writer;
    /** A pod as the watch has it, by {@code namespace/name}. */
    private final Function<String, Pod> watched;
    private final Counter woken;
    private final Counter wakeFailed;

    PodLifecycle(PaWriter writer, Function<String, Pod> watched, MeterRegistry metrics) {
        this.writer = writer;
        this.watched = watched;
        String wakes = "parked pods asked to serve again, by how it ended";
        this.woken = Counter.builder("dilu_autoscaler_wakes_total").tag("result", "woken").description(wakes).register(metrics);
        this.wakeFailed = Counter.builder("dilu_autoscaler_wakes_total").tag("result", "failed").description(wakes)
                .register(metrics);
    }

    /** The revision's pods as watched, with the parks and wakes written that the watch does not show yet. */
    InstanceLifecycle seen(InstanceLifecycle watchedPods, Tracked tracked, Instant now) {
        return tracked.written.over(watchedPods, now);
    }

    /**
     * Brings the revision's pods to the decision ({@link InstanceLifecycle#plan}): wakes, parks, the serving conditions of
     * parked pods, and the replacement of pods refused a wake (a cold start elsewhere, counted as a failed wake).
     */
    void bring(String revision, String namespace, Tracked tracked, InstanceLifecycle pods, RevisionScaler.Decision d,
            Instant now) {
        Map<String, Instance> byUid = pods.instances().stream().collect(Collectors.toMap(Instance::uid, p -> p, (a, b) -> a));
        tracked.waking.entrySet().removeIf(e -> {
            Instance p = byUid.get(e.getKey());
            if (p != null && p.phase() == InstanceLifecycle.Phase.SERVING) {
                woken.increment();
                LOG.infof("%s: pod %s serves again %d ms after its wake was asked", revision, p.name(),
                        Duration.between(e.getValue(), now).toMillis());
                return true;
            }
            return p == null || p.deleting() || p.wakeFailed();
        });
        InstanceLifecycle.Plan plan = pods.plan(d.desired(), d.parked(), d.lastKept());
        if (!plan.any()) {
            return;
        }
        plan.realize(intent -> write(revision, namespace, tracked, intent, now));
        LOG.infof("%s: woke %s, parked %s, replaced %s after a refused wake (%d serving and %d parked asked)", revision,
                names(plan.wake()), names(plan.park()), names(plan.delete()), d.desired(), d.parked());
    }

    /** Carries one intent out as a pod write; false when the API server refused it (logged). */
    boolean write(String revision, String ns, Tracked tracked, Intent intent, Instant now) {
        Instance p = intent.pod();
        try {
            switch (intent) {
                case Intent.Wake w -> {
                    writer.wake(ns, p.name(), p.uid(), now);
                    tracked.waking.put(p.uid(), now);
                    tracked.written.wrote(p.uid(), new InstanceLifecycle.Written(false, now));
                }
                case Intent.Park park -> {
                    writer.park(ns, p.name(), p.uid(), now);
                    tracked.written.wrote(p.uid(), new InstanceLifecycle.Written(true, now));
                }
                case Intent.Serving s -> writer.serving(ns, p.name(), p.uid(), conditions(ns, p.name()), s.path(), now);
                case Intent.Delete refused -> {
                    writer.delete(ns, p.name());
                    wakeFailed.increment();
                }
            }
            return true;
        } catch (KubernetesClientException e) {
            LOG.warnf("%s: cannot %s pod %s (the next tick plans again): %s", revision, what(intent), p.name(),
                    e.getMessage());
            return false;
        }
    }

    private static String what(Intent intent) {
        return switch (intent) {
            case Intent.Wake w -> "wake";
            case Intent.Park p -> "park";
            case Intent.Serving s -> switch (s.path()) {
                case OUT -> "take out of the path";
                case IN -> "leave in the request path";
                case KEPT -> "keep in the request path";
            };
            case Intent.Delete d -> "delete after its refused wake";
        };
    }

    /** A pod's conditions as the watch has them, for a JSON Patch that replaces one of them where it is. */
    private List<PodCondition> conditions(String namespace, String name) {
        Pod p = watched.apply(namespace + "/" + name);
        return p == null || p.getStatus() == null ? null : p.getStatus().getConditions();
    }

    private static List<String> names(List<Instance> pods) {
        return pods.stream().map(Instance::name).toList();
    }

    /** What the lifecycle needs to know of a pod, read from its annotations, spec and status. */
    static Instance instance(Pod p) {
        Map<String, String> a = p.getMetadata().getAnnotations() == null ? Map.of() : p.getMetadata().getAnnotations();
        boolean ready = p.getStatus() != null && p.getStatus().getConditions() != null && p.getStatus().getConditions().stream()
                .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
        return new Instance(p.getMetadata().getName(), p.getMetadata().getUid(),
                time(p.getMetadata().getCreationTimestamp()), ready, p.getStatus() == null ? null : p.getStatus().getPodIP(),
                Optional.ofNullable(a.get(DiluNames.PARKED)).map(PodLifecycle::time), a.get(DiluNames.WAKE) != null,
                a.get(DiluNames.WAKE_FAILED) != null, PodShares.servingGate(p),
                PodShares.kept(p) ? InstanceLifecycle.Path.KEPT
                        : PodShares.serving(p) ? InstanceLifecycle.Path.IN : InstanceLifecycle.Path.OUT,
                p.getMetadata().getDeletionTimestamp() != null);
    }

    /** An RFC 3339 time; the epoch when there is none or it does not parse (it sorts first: the oldest). */
    private static Instant time(String rfc3339) {
        try {
            return rfc3339 == null ? Instant.EPOCH : Instant.parse(rfc3339);
        } catch (DateTimeException e) {
            return Instant.EPOCH;
        }
    }
}
