package io.dilu.extender;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.extender.Refusals.Reason;
import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderBindingArgs;
import io.dilu.extender.api.ExtenderBindingResult;
import io.dilu.extender.api.ExtenderFilterResult;
import io.dilu.extender.api.HostPriority;
import io.dilu.extender.api.InvalidRequest;
import io.dilu.extender.api.PodRef;
import io.dilu.extender.kube.Binder;
import io.dilu.extender.kube.ClusterWatcher;
import io.dilu.extender.kube.ExtenderEvents;
import io.dilu.extender.kube.ParkingWriter;
import io.dilu.extender.state.PlacementBook;
import io.dilu.extender.state.PlacementBook.BindPlan;
import io.dilu.kube.GpuProductSelection;
import io.dilu.kube.PodShare;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Pod;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * The kube-scheduler extender API (v1, JSON over HTTP): {@code filter}, {@code prioritize} and {@code bind}.
 * Pods that ask for no {@code dilu.io} resource pass through untouched.
 *
 * <p>It listens on loopback for kube-scheduler in the same pod, and still trusts no body: what a request names
 * is checked against the watched cluster (the pod must exist under that namespace, name and UID; its resources
 * are read from the API server's copy, not the body's), and a bind must name the pod its reservation was made
 * for.
 */
@Path("/")
@Consumes(MediaType.APPLICATION_JSON)
@Produces(MediaType.APPLICATION_JSON)
public class ExtenderResource {

    private static final Logger LOG = Logger.getLogger(ExtenderResource.class);

    private final PlacementBook book;
    private final ClusterWatcher watcher;
    private final Binder binder;
    private final InstantSource clock;
    private final Refusals refusals;
    private final Counter bindFailures;
    private final ExtenderEvents events;
    private final ParkingWriter parking;

    public ExtenderResource(PlacementBook book, ClusterWatcher watcher, Binder binder, InstantSource clock,
            Refusals refusals, MeterRegistry metrics, ExtenderEvents events, ParkingWriter parking) {
        this.events = events;
        this.parking = parking;
        this.book = book;
        this.watcher = watcher;
        this.binder = binder;
        this.clock = clock;
        this.refusals = refusals;
        this.bindFailures = Counter.builder("dilu_extender_bind_failures_total")
                .description("binds that failed and were rolled back").register(metrics);
    }

    @POST
    @Path("filter")
    public ExtenderFilterResult filter(ExtenderArgs args) {
        PodRef ref = body(args).podRef();
        List<String> candidates = args.candidates();
        if (!watcher.synced()) {
            return refuseFilter(Reason.NOT_SYNCED, "the Dilu extender is still reading the cluster; retry");
        }
        Optional<Pod> pod = watcher.podOrRead(ref.namespace(), ref.name(), ref.uid());
        if (pod.isEmpty()) {
            // A made-up pod stays unknown and reserves nothing.
            return refuseFilter(Reason.UNKNOWN_POD, "pod " + ref + " is not in the Dilu extender's view of the "
                    + "cluster nor on the API server; nothing was reserved");
        }
        Optional<PodShare> share = PodShares.of(pod.get());
        if (share.isEmpty()) {
            return new ExtenderFilterResult(candidates, Map.of(), null);
        }
        if (share.get().terminal() || share.get().nodeName().isPresent()) {
            String state = share.get().terminal() ? "finished or being deleted"
                    : "bound to node " + share.get().nodeName().get() + " already";
            return refuseFilter(Reason.NOT_PENDING, "pod " + ref + " is " + state + "; nothing to place");
        }
        PlacementBook.Filtered f = book.filter(share.get(), GpuProductSelection.of(pod.get()), candidates, clock.instant());
        if (f.node().isEmpty()) {
            events.refused(ref, f.failed());
        }
        // The pod is placed with their memory: only now do the parked pods it was taken from go.
        parking.evict(ref, f.evicted());
        return new ExtenderFilterResult(f.node().map(List::of).orElse(List.of()), f.failed(), null);
    }

    /** The node reserved at filter gets the top score, so the scheduler's own scores cannot move the pod. */
    @POST
    @Path("prioritize")
    public List<HostPriority> prioritize(ExtenderArgs args) {
        PodRef ref = body(args).podRef();
        List<String> candidates = args.candidates();
        // Nodes left out score 0; only the node holding the pod's reservation is worth naming.
        return book.reservedNode(ref.uid()).filter(candidates::contains)
                .map(n -> List.of(new HostPriority(n, HostPriority.MAX_SCORE))).orElse(List.of());
    }

    @POST
    @Path("bind")
    public ExtenderBindingResult bind(ExtenderBindingArgs args) {
        PodRef ref = body(args).podRef();
        String node = args.target();
        if (!watcher.synced()) {
            return refuseBind(Reason.NOT_SYNCED, "the Dilu extender is still reading the cluster; retry");
        }
        BindPlan plan = book.startBinding(ref.uid(), ref.namespace(), ref.name(), node);
        if (plan instanceof BindPlan.Assign assign) {
            return bindTo(ref, node, Optional.of(assign.gpus()));
        }
        BindPlan.Refuse refuse = (BindPlan.Refuse) plan;
        return switch (refuse.cause()) {
            case NOT_RESERVED -> bindUnreserved(ref, node, refuse);
            case OTHER_POD -> refuseBind(Reason.BIND_MISMATCH, refuse.reason());
            case OTHER_NODE -> refuseBind(Reason.BIND_OTHER_NODE, refuse.reason());
            case BINDING_OR_BOUND -> refuseBind(Reason.BIND_BUSY, refuse.reason());
        };
    }

    /**
     * Nothing reserved under the UID: a Dilu pod is placed again (never bound without its GPUs); a pod without
     * {@code dilu.io} resources is bound as the default binder would, once the watch confirms that pod and node
     * exist. Nothing here calls the API server for a pod or node the watch does not know.
     */
    private ExtenderBindingResult bindUnreserved(PodRef ref, String node, BindPlan.Refuse notReserved) {
        Optional<Pod> pod = watcher.pod(ref.namespace(), ref.name(), ref.uid());
        if (pod.isEmpty()) {
            return refuseBind(Reason.UNKNOWN_POD, "pod " + ref + " is not in the Dilu extender's view of the cluster; "
                    + "nothing was bound");
        }
        if (PodShares.of(pod.get()).isPresent()) {
            return refuseBind(Reason.BIND_UNRESERVED, notReserved.reason());
        }
        if (!watcher.nodeExists(node)) {
            return refuseBind(Reason.UNKNOWN_NODE, "ExtenderBindingArgs.Node " + node + " is not a node of the cluster");
        }
        return bindTo(ref, node, Optional.empty());
    }

    private ExtenderBindingResult bindTo(PodRef ref, String node, Optional<AssignedGpus> gpus) {
        try {
            binder.bind(ref.namespace(), ref.name(), ref.uid(), node, gpus);
        } catch (RuntimeException e) {
            // Whatever went wrong, the GPUs go back: a bind left in progress would hold them for ever.
            gpus.ifPresent(g -> {
                book.bindFailed(ref.uid());
                events.bindFailed(ref, node, e.getMessage());
            });
            bindFailures.increment();
            LOG.warnf("binding %s to %s failed, GPUs released: %s", ref, node, e.getMessage());
            return new ExtenderBindingResult("binding failed: " + e.getMessage());
        }
        gpus.ifPresent(g -> {
            book.bindSucceeded(ref.uid());
            book.placement(ref.uid()).ifPresent(placed -> events.placed(ref, placed));
        });
        return ExtenderBindingResult.OK;
    }

    private ExtenderFilterResult refuseFilter(Reason reason, String message) {
        refusals.count(reason);
        return ExtenderFilterResult.error(message);
    }

    private ExtenderBindingResult refuseBind(Reason reason, String message) {
        refusals.count(reason);
        LOG.debugf("bind refused (%s): %s", reason, message);
        return new ExtenderBindingResult(message);
    }

    /** An empty body (or {@code null}) reaches the method as null. */
    private static <T> T body(T args) {
        if (args == null) {
            throw new InvalidRequest("the request body is missing; it must be a JSON object (ExtenderArgs for filter "
                    + "and prioritize, ExtenderBindingArgs for bind)");
        }
        return args;
    }
}
