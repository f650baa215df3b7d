package io.dilu.extender.kube;

import io.dilu.core.contract.DiluNames;
import io.dilu.extender.api.PodRef;
import io.dilu.extender.state.ParkingAnswer;
import io.dilu.extender.state.PlacementBook;
import io.dilu.extender.state.Standing;
import io.dilu.kube.ParkingPatch;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * The extender's writes for parked pods, on a thread of their own so that neither the watch nor a scheduling request
 * waits for the API server: a wake's answer ({@code dilu.io/serving} True then {@code dilu.io/wake} removed, or {@code
 * dilu.io/wake-failed}) and the deletion of parked pods evicted for a placement. Counts wakes ({@code
 * dilu_extender_wakes_total{result}}) and evictions ({@code dilu_extender_parked_evictions_total}).
 */
@ApplicationScoped
@Startup // so that its counters are exported (at 0) from the start
public class ParkingWriter {

    private static final Logger LOG = Logger.getLogger(ParkingWriter.class);

    private final KubernetesClient client;
    private final InstantSource clock;
    private final ExtenderEvents events;
    private final ExecutorService writer = Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-parking").unstarted(r));
    /** Answers being written, by pod UID: a watch event that asks for the same again while it is written asks nothing. */
    private final Map<String, ParkingAnswer> inFlight = new ConcurrentHashMap<>();
    private final Counter woken;
    private final Counter failed;
    private final Counter evictedForPlacement;
    private final Counter handedBack;

    public ParkingWriter(KubernetesClient client, InstantSource clock, ExtenderEvents events, MeterRegistry metrics) {
        this.client = client;
        this.clock = clock;
        this.events = events;
        String wakes = "wakes of parked pods the extender answered";
        this.woken = Counter.builder("dilu_extender_wakes_total").tag("result", "woken").description(wakes).register(metrics);
        this.failed = Counter.builder("dilu_extender_wakes_total").tag("result", "failed").description(wakes).register(metrics);
        String evicted = "parked pods deleted: a placement needed their GPU memory, or nothing else held their GPU";
        this.evictedForPlacement = Counter.builder("dilu_extender_parked_evictions_total").tag("reason", "placement")
                .description(evicted).register(metrics);
        this.handedBack = Counter.builder("dilu_extender_parked_evictions_total").tag("reason", "gpu-handed-back")
                .description(evicted).register(metrics);
    }

    /** After the book observed {@code pod}: writes what it asks for, counting a wake it decided. */
    public void answer(Pod pod, Standing standing, long eventNanos) {
        if (standing.wakeDecided()) {
            (standing.wakeRefusal().isPresent() ? failed : woken).increment();
        }
        Map<String, String> a = pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
        ParkingAnswer answer = ParkingAnswer.of(standing, a.containsKey(DiluNames.WAKE), a.containsKey(DiluNames.WAKE_FAILED),
                PodShares.servingGate(pod), PodShares.serving(pod));
        String uid = pod.getMetadata().getUid();
        if (!answer.any() || answer.equals(inFlight.put(uid, answer))) {
            return;
        }
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        List<PodCondition> conditions = pod.getStatus() == null ? null : pod.getStatus().getConditions();
        writer.execute(() -> {
            try {
                write(ns, name, uid, conditions, answer);
                if (standing.wakeDecided()) {
                    LOG.infof("wake of %s/%s %s in %.1f ms from the watch event (decision and writes)", ns, name,
                            answer.wakeFailed().map(r -> "refused: " + r).orElse("answered"),
                            (System.nanoTime() - eventNanos) / 1e6);
                }
            } catch (KubernetesClientException e) {
                LOG.warnf("pod %s/%s: cannot write the wake's answer (the next watch event retries): %s", ns, name,
                        e.getMessage());
            } finally {
                inFlight.remove(uid, answer);
            }
        });
    }

    private void write(String ns, String name, String uid, List<PodCondition> conditions, ParkingAnswer answer) {
        var pod = client.pods().inNamespace(ns).withName(name);
        // The condition first: the pod is ready, and its endpoints serve, one write sooner.
        if (answer.servingTrue()) {
            pod.subresource("status").patch(PatchContext.of(PatchType.JSON), ParkingPatch.servingCondition(uid, conditions, true,
                    "Booked", "its SM request is booked on its GPUs by the Dilu scheduler extender", clock.instant()));
        }
        if (answer.wakeFailed().isPresent()) {
            pod.patch(PatchContext.of(PatchType.JSON_MERGE), ParkingPatch.wakeFailed(uid, answer.wakeFailed().get()));
        } else if (answer.woken()) {
            pod.patch(PatchContext.of(PatchType.JSON_MERGE), ParkingPatch.woken(uid));
        }
    }

    /**
     * The grace period a parked pod the book let go is deleted with. The book gives its memory away at once, so it must
     * stop at once: it serves nothing, and its own grace period (Knative's revision timeout, 300 s by default; any
     * length the tenant set) would leave its model in memory the book counts as free. One second, not zero: zero
     * removes the pod from the API before the kubelet has ended its containers.
     */
    static final long EVICTED_GRACE_SECONDS = 1;

    /** Deletes parked pods the book evicted to place {@code placed}, telling each with an Event. */
    public void evict(PodRef placed, List<PlacementBook.Evicted> victims) {
        delete(victims, evictedForPlacement, v -> "deleted for pod " + placed.namespace() + "/" + placed.name()
                + ", which needed its " + v.memoryMib() + " MiB on GPU " + v.gpu());
    }

    /** Deletes parked pods whose GPU nothing else held ({@link PlacementBook#handBack}), telling each with an Event. */
    public void handBack(List<PlacementBook.Evicted> victims) {
        delete(victims, handedBack, v -> "deleted: nothing but parked pods held GPU " + v.gpu()
                + ", which goes back to the pool rather than stay in use for their " + v.memoryMib() + " MiB");
    }

    private void delete(List<PlacementBook.Evicted> victims, Counter counter, Function<PlacementBook.Evicted, String> because) {
        for (PlacementBook.Evicted v : victims) {
            counter.increment();
            String why = because.apply(v);
            events.parkedEvicted(v, why);
            writer.execute(() -> {
                try {
                    client.pods().inNamespace(v.namespace()).withName(v.name()).withGracePeriod(EVICTED_GRACE_SECONDS)
                            .delete();
                } catch (KubernetesClientException e) {
                    LOG.warnf("cannot delete parked pod %s/%s (%s): %s", v.namespace(), v.name(), why, e.getMessage());
                }
            });
        }
    }

    void stop(@Observes ShutdownEvent event) throws InterruptedException {
        writer.shutdown();
        writer.awaitTermination(2, TimeUnit.SECONDS);
    }
}
