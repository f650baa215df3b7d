package io.dilu.extender.kube;

import io.dilu.kube.events.EventCounts;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.extender.ExtenderConfig;
import io.dilu.extender.api.PodRef;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.events.EventThrottle;
import io.dilu.kube.events.PodEvent;
import io.dilu.kube.events.PodEventRecorder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * Tells pods where they went, through Kubernetes Events: {@value #PLACED} (Normal) once bound, naming the node and
 * each GPU's share; {@value #REFUSED} (Warning) when no candidate node can take the pod, or its bind failed,
 * with why; {@value #PARKED_EVICTED} (Normal) on a parked pod deleted because a placement needed its memory, or because nothing but parked pods held its GPU. kube-scheduler's own FailedScheduling event lists every node's reason; this one is the short form.
 *
 * <p>A pending pod is filtered again at every scheduling attempt, so refusals come in runs: the throttle writes
 * one per pod and reason per {@code dilu.extender.event-window}, the rest counted into the next. Writes run on a
 * thread of their own: a scheduling request never waits for them.
 */
@ApplicationScoped
@Startup // so that dilu_pod_events_total is exported (at 0) from the start
public class ExtenderEvents {

    private static final Logger LOG = Logger.getLogger(ExtenderEvents.class);

    public static final String PLACED = "DiluPlaced";
    public static final String REFUSED = "DiluRefused";
    public static final String PARKED_EVICTED = "DiluParkedEvicted";
    /** Nodes named in a refusal, per reason; the rest are counted. */
    private static final int NODES_NAMED = 3;

    private final PodEventRecorder recorder;
    private final ScheduledExecutorService threads;

    @Inject
    public ExtenderEvents(KubernetesClient client, ExtenderConfig config, MeterRegistry metrics, InstantSource clock) {
        this.threads = Executors.newSingleThreadScheduledExecutor(
                r -> Thread.ofPlatform().daemon().name("dilu-events").unstarted(r));
        this.recorder = recorder(client, config.eventWindow(), config.eventsPerWindow(), clock, threads, metrics);
        threads.scheduleWithFixedDelay(this::flush, 5, 5, TimeUnit.SECONDS);
    }

    /** Over a recorder of the caller's (tests: a clock of theirs, writes on the calling thread). */
    public ExtenderEvents(PodEventRecorder recorder) {
        this.recorder = recorder;
        this.threads = null;
    }

    /** The extender's recorder: writes through {@code client}, counted in {@code dilu_pod_events_total}. */
    public static PodEventRecorder recorder(KubernetesClient client, Duration window, int perWindow, InstantSource clock,
            Executor writer, MeterRegistry metrics) {
        String instance = System.getenv().getOrDefault("HOSTNAME", "dilu-scheduler-extender");
        return new PodEventRecorder(new PodEventRecorder.Source("dilu-scheduler-extender", instance, null),
                new EventThrottle(window, perWindow, 4096), clock,
                e -> client.v1().events().inNamespace(e.getMetadata().getNamespace()).resource(e).create(),
                writer, new EventCounts(metrics, List.of(PLACED, REFUSED, PARKED_EVICTED)));
    }

    /** The pod is bound where it was placed, with these GPU shares. */
    public void placed(PodRef pod, PlacementDecision.Placed placed) {
        String gpus = placed.slots().stream().map(s -> "GPU " + s.gpuUuid() + " (SM request " + s.requestMilli() / 10
                + "%, limit " + s.limitMilli() / 10 + "%, " + s.memoryMib() + " MiB)").collect(Collectors.joining(", "));
        recorder.record(PodEvent.normal(pod.namespace(), pod.name(), pod.uid(), PLACED,
                "placed on node " + placed.node() + ": " + gpus));
    }

    /** No candidate node can take the pod: why, per node (the filter's answer). */
    public void refused(PodRef pod, Map<String, String> whyPerNode) {
        Map<String, List<String>> byReason = new TreeMap<>();
        whyPerNode.forEach((node, why) -> byReason.computeIfAbsent(why, w -> new ArrayList<>()).add(node));
        String reasons = byReason.isEmpty() ? "the scheduler offered no candidate node"
                : byReason.entrySet().stream().map(e -> e.getKey() + " (" + nodes(e.getValue()) + ")")
                        .collect(Collectors.joining("; "));
        recorder.record(PodEvent.warning(pod.namespace(), pod.name(), pod.uid(), REFUSED,
                "no node can take the pod: " + reasons));
    }

    /** The bind to {@code node} failed; its GPUs were given back and the pod will be placed again. */
    public void bindFailed(PodRef pod, String node, String why) {
        recorder.record(PodEvent.warning(pod.namespace(), pod.name(), pod.uid(), REFUSED,
                "binding to node " + node + " failed, its GPUs were released and it will be placed again: " + why));
    }

    /** A parked pod is deleted: a placement needed its GPU memory, or nothing else held its GPU. */
    public void parkedEvicted(PlacementBook.Evicted victim, String because) {
        recorder.record(PodEvent.normal(victim.namespace(), victim.name(), victim.uid(), PARKED_EVICTED,
                "parked since " + victim.parkedAt() + "; " + because));
    }

    /** Writes what waited and may go now (every 5 s on the events thread). */
    public void flush() {
        try {
            recorder.flush();
        } catch (RuntimeException e) {
            // A scheduled task that throws is never run again.
            LOG.errorf(e, "flushing events failed; the next round retries");
        }
    }

    private static String nodes(List<String> names) {
        List<String> sorted = names.stream().sorted().toList();
        String named = String.join(", ", sorted.subList(0, Math.min(NODES_NAMED, sorted.size())));
        return (sorted.size() == 1 ? "node " : "nodes ") + named
                + (sorted.size() > NODES_NAMED ? " and " + (sorted.size() - NODES_NAMED) + " more" : "");
    }

    /** Events already let through are written before the extender goes (a couple of seconds at most). */
    void stop(@Observes ShutdownEvent event) throws InterruptedException {
        if (threads != null) {
            threads.shutdown();
            threads.awaitTermination(2, TimeUnit.SECONDS);
        }
    }
}
