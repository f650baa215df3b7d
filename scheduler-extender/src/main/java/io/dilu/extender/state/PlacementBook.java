package io.dilu.extender.state;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.InstanceBook;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.kube.GpuProductSelection;
import io.dilu.kube.PodShare;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.jboss.logging.Logger;

/**
 * The extender's view of the cluster: every GPU from the nodes' inventories, and what is booked on it —
 * pods bound with {@code dilu.io/assigned-gpus} (from the API server, the truth after a restart), pods being
 * bound by this extender, and GPUs reserved at filter time for the pod the scheduler is deciding on. A
 * reservation is booked at once, so two pods in flight never get the same room; it expires when no bind
 * follows, and is taken back when the bind fails.
 *
 * <p><b>Parking.</b> What a pod books, parked or not, is core's {@link InstanceBook}, the book the co-scaling fleet model
 * keeps too: a pod the autoscaler parked ({@code dilu.io/parked}) is booked at its memory alone (its SM request and
 * limit go to new placements, its memory stays hard: Algorithm 1's constraint 4). Unparked — a wake, asked by {@code
 * dilu.io/wake} — it takes its SM request and limit back where its GPUs have room by the placement's own rule; where
 * they have none the wake is refused, with the reason, and the pod stays booked at its memory ({@code
 * dilu.io/wake-failed}) until the autoscaler parks it again or deletes it. A placement that finds no room takes parked
 * pods whose memory would make it out of the book, and tells the caller to delete them; a GPU that only parked pods
 * hold goes back ({@link #handBack}).
 *
 * <p>Kubernetes-free: the adapters feed it {@link PodShare}s and inventories and pass the time in. All
 * methods are serialised: kube-scheduler decides one pod at a time and a decision takes microseconds.
 */
public final class PlacementBook {

    private static final Logger LOG = Logger.getLogger(PlacementBook.class);

    /** How far a booking has come. */
    public enum Phase {
        /** Chosen at filter; the scheduler has not asked to bind yet. */
        RESERVED,
        /** Bind in progress. */
        BINDING,
        /** Bound: by this extender (until the watch confirms it) or seen bound on the API server. */
        BOUND
    }

    /**
     * A booking's pod and how far its booking has come: bind must name that same pod, not only its UID. What it books is
     * the core book's ({@link InstanceBook}).
     *
     * @param split a split container's placement, written as stages
     */
    private record Entry(String namespace, String name, boolean split, Phase phase, Instant expires) {

        Entry in(Phase next, Instant until) {
            return new Entry(namespace, name, split, next, until);
        }
    }

    /**
     * The answer to filter.
     *
     * @param node the node chosen for the pod (empty when none can take it)
     * @param failed why each other candidate node was not chosen
     * @param evicted parked pods taken out of the book to make room for this one: the caller deletes them
     */
    public record Filtered(Optional<String> node, Map<String, String> failed, List<Evicted> evicted) {

        public Filtered(Optional<String> node, Map<String, String> failed) {
            this(node, failed, List.of());
        }
    }

    /** A parked pod evicted for a placement: its memory on {@code gpu} went to the pod placed. */
    public record Evicted(String uid, String namespace, String name, String gpu, long memoryMib, Instant parkedAt) {}

    /** What to do at bind. */
    public sealed interface BindPlan {
        /** Write this assignment on the pod, then bind it. */
        record Assign(AssignedGpus gpus) implements BindPlan {}

        /** Do not bind: the reason goes back to the scheduler, which retries the pod. */
        record Refuse(Cause cause, String reason) implements BindPlan {}

        /** Why a bind is refused; the booking, if any, is left as it was. */
        enum Cause {
            /** Nothing is reserved under the UID. */
            NOT_RESERVED,
            /** Something is reserved under the UID, but for a pod of another namespace or name. */
            OTHER_POD,
            /** The reservation is on another node. */
            OTHER_NODE,
            /** The pod is being bound or is bound already: a second bind must not touch that booking. */
            BINDING_OR_BOUND
        }
    }

    private final InstanceBook book;
    private final long defaultMemoryMib;
    private final Duration reservationTtl;
    private final TreeMap<String, NodeInventory> nodes = new TreeMap<>();
    private final Map<String, Entry> entries = new LinkedHashMap<>();
    /** Parked pods evicted for a placement, until the watch shows them gone: they are not booked again. */
    private final Set<String> evicted = new HashSet<>();
    private boolean dirty;

    public PlacementBook(PlacementParameters params, long defaultMemoryMib, Duration reservationTtl) {
        this.book = new InstanceBook(new ComplementaryPlacement(params), new ClusterState(List.of()));
        this.defaultMemoryMib = defaultMemoryMib;
        this.reservationTtl = reservationTtl;
    }

    // ---- nodes ----

    public synchronized void putNode(String name, List<GpuDevice> gpus) {
        NodeInventory inventory = new NodeInventory(name, gpus);
        if (!inventory.equals(nodes.get(name))) {
            nodes.put(name, inventory);
            dirty = true;
        }
    }

    public synchronized void removeNode(String name) {
        if (nodes.remove(name) != null) {
            dirty = true;
        }
    }

    /** Rebuilds the GPU index after nodes changed and books everything again on it. */
    private void refresh() {
        if (!dirty) {
            return;
        }
        dirty = false;
        Set<String> seen = new HashSet<>();
        List<NodeInventory> usable = new ArrayList<>();
        for (NodeInventory n : nodes.values()) {
            if (n.gpus().stream().allMatch(g -> seen.add(g.uuid()))) {
                usable.add(n);
            } else {
                LOG.warnf("node %s reports a GPU UUID another node reports too; its GPUs are left out", n.name());
            }
        }
        // A booking on a GPU that no inventory lists (yet) or a node over its memory is kept, and booked again here.
        book.rebuild(new ClusterState(usable));
    }

    private void drop(String uid) {
        if (entries.remove(uid) != null) {
            book.release(uid);
        }
    }

    private void expire(Instant now) {
        List<String> stale = entries.entrySet().stream()
                .filter(e -> e.getValue().phase() == Phase.RESERVED && now.isAfter(e.getValue().expires()))
                .map(Map.Entry::getKey).toList();
        stale.forEach(uid -> {
            LOG.debugf("reservation of %s expired without a bind", uid);
            drop(uid);
        });
    }

    // ---- pods seen on the API server ----

    /**
     * A pod as the watch sees it: bound pods with an assignment are booked as they are, parked ones at their memory;
     * an unparked one is woken where there is room; ended pods are released.
     */
    public synchronized Standing observe(PodShare pod) {
        if (pod.terminal()) {
            drop(pod.uid());
            evicted.remove(pod.uid());
            return Standing.NONE;
        }
        if (evicted.contains(pod.uid()) || pod.nodeName().isEmpty() || pod.assigned().isEmpty()) {
            // evicted (its memory is another pod's), not bound yet, or bound without Dilu (the node agent will annotate it)
            return Standing.NONE;
        }
        Optional<PlacementDecision.Placed> actual = PodSlots.held(pod, pod.nodeName().get(), pod.assigned().get(), defaultMemoryMib);
        if (actual.isEmpty()) {
            return Standing.NONE;
        }
        refresh();
        boolean memoryOnly = pod.parked() || pod.wakeFailed();
        Entry before = entries.get(pod.uid());
        if (before != null && book.booking(pod.uid()).orElseThrow().placed().equals(actual.get())) {
            entries.put(pod.uid(), before.in(Phase.BOUND, before.expires()));
        } else {
            drop(pod.uid());
            // Seen for the first time (or a restart): parked, or asked to wake, it is booked at its memory first, and a
            // wake takes its SMs back only where there is room.
            entries.put(pod.uid(), new Entry(pod.namespace(), pod.name(), pod.assigned().get().isSplit(), Phase.BOUND,
                    Instant.MAX));
            if (memoryOnly || pod.wakeAsked()) {
                book.bookParked(pod.uid(), pod.namespace(), pod.function(), actual.get(), pod.parkedAt());
            } else {
                book.book(pod.uid(), pod.namespace(), pod.function(), actual.get());
            }
        }
        book.keep(pod.uid(), pod.parkedKept());
        InstanceBook.Booking b = book.booking(pod.uid()).orElseThrow();
        if (pod.parked() && (!b.parked() || b.refusal().isPresent() || !b.parkedAt().equals(pod.parkedAt()))) {
            book.park(pod.uid(), pod.parkedAt()); // parked (again): its SMs go back to the placement
            return new Standing(Standing.Kind.PARKED, Optional.empty(), false);
        }
        if (memoryOnly || b.parked() && b.refusal().isPresent()) {
            // Refused already, the answer perhaps not yet written: the decision stands until it is parked again or goes.
            return new Standing(Standing.Kind.PARKED, b.refusal(), false);
        }
        if (!b.parked()) {
            return Standing.SERVING;
        }
        Optional<String> refusal = book.wake(pod.uid());
        return new Standing(refusal.isPresent() ? Standing.Kind.PARKED : Standing.Kind.SERVING, refusal, true);
    }

    /** The pod is gone from the API server. */
    public synchronized void forget(String uid) {
        drop(uid);
        evicted.remove(uid);
    }

    // ---- the scheduler's calls ----

    /** Chooses a node and GPUs for a pod that selects no GPU product. */
    public Filtered filter(PodShare pod, Collection<String> candidates, Instant now) {
        return filter(pod, GpuProductSelection.ANY, candidates, now);
    }

    /**
     * Chooses a node and GPUs for the pod among the candidates and reserves them; with a product selection, only
     * GPUs of a selected model ({@link GpuModelChoice}).
     */
    public synchronized Filtered filter(PodShare pod, GpuProductSelection products, Collection<String> candidates,
            Instant now) {
        expire(now);
        refresh();
        Entry held = entries.get(pod.uid());
        if (held != null && held.phase() != Phase.RESERVED) {
            return chosen(placement(pod.uid()).orElseThrow().node(), candidates);
        }
        drop(pod.uid()); // a new attempt replaces the last one's reservation
        Map<String, String> failed = new TreeMap<>();
        List<String> known = new ArrayList<>();
        for (String n : candidates) {
            if (nodes.containsKey(n)) {
                known.add(n);
            } else {
                failed.put(n, "node has no GPU inventory (dilu.io/gpu-inventory): no Dilu node agent reports its GPUs");
            }
        }
        PodAsk ask = PodAsk.of(pod, defaultMemoryMib);
        if (ask instanceof PodAsk.Invalid invalid) {
            known.forEach(n -> failed.put(n, invalid.reason()));
            return new Filtered(Optional.empty(), failed);
        }
        var request = ((PodAsk.Share) ask).request();
        GpuModelChoice models = GpuModelChoice.of(products, request.gpus(), known.stream().map(nodes::get).toList());
        failed.putAll(models.refused());
        known.removeAll(models.refused().keySet());
        if (!models.gpuModels().isEmpty()) {
            request = new InstanceRequest(request.id(), request.function(), request.gpus(), request.requestMilli(),
                    request.limitMilli(), request.memoryMib(), request.splittable(), models.gpuModels());
        }
        if (known.isEmpty()) {
            return new Filtered(Optional.empty(), failed);
        }
        InstanceBook.Placement placement = book.place(request, pod.namespace(), Optional.of(known));
        PlacementDecision decision = placement.decision();
        List<Evicted> gone = placement.evicted().stream().map(this::evicted).toList();
        if (decision instanceof PlacementDecision.Infeasible infeasible) {
            known.forEach(n -> failed.put(n, infeasible.reason()));
            return new Filtered(Optional.empty(), failed);
        }
        PlacementDecision.Placed placed = (PlacementDecision.Placed) decision;
        entries.put(pod.uid(), new Entry(pod.namespace(), pod.name(), request.splittable(), Phase.RESERVED,
                now.plus(reservationTtl)));
        book.book(pod.uid(), pod.namespace(), request.function(), placed);
        return new Filtered(Optional.of(placed.node()), failed, gone);
    }

    /**
     * Parked pods on GPUs that nothing but parked pods holds ({@link InstanceBook#handBack}; a revision's last one kept in
     * the request path holds its GPU), taken out of the book for good: the caller deletes them, and their GPUs go back.
     * Asked after every change the watch shows, so that a GPU is handed back as soon as its last serving or reserved pod
     * leaves it.
     */
    public synchronized List<Evicted> handBack() {
        return book.handBack().stream().map(this::evicted).toList();
    }

    /** A parked pod the core book took out for good: it is to be deleted, and is not booked again while it goes. */
    private Evicted evicted(InstanceBook.Evicted gone) {
        Entry e = entries.remove(gone.id());
        evicted.add(gone.id());
        LOG.infof("parked pod %s/%s evicted: its %d MiB on GPU %s are freed", e.namespace(), e.name(), gone.memoryMib(),
                gone.gpu());
        return new Evicted(gone.id(), e.namespace(), e.name(), gone.gpu(), gone.memoryMib(), gone.parkedAt());
    }

    /**
     * Only the chosen node passes. The others need no reason: the pod is placed, so nobody reads one, and
     * naming a thousand nodes would cost the scheduler more than the decision did.
     */
    private static Filtered chosen(String node, Collection<String> candidates) {
        if (candidates.contains(node)) {
            return new Filtered(Optional.of(node), Map.of());
        }
        return new Filtered(Optional.empty(), Map.of(node, "the pod's GPUs are reserved on node " + node
                + ", which the scheduler no longer offers; it will be placed again"));
    }

    /** The node reserved for the pod, if any: it gets the top score. */
    public synchronized Optional<String> reservedNode(String uid) {
        return placement(uid).map(PlacementDecision.Placed::node);
    }

    /**
     * Starts binding pod {@code namespace/name} with {@code uid} to {@code node}: its reservation becomes a bind in
     * progress. The bind must name the pod the reservation was made for, on the node chosen for it; anything else
     * is refused and leaves the reservation as it was, so that a caller who knows a UID cannot drop or steal it.
     */
    public synchronized BindPlan startBinding(String uid, String namespace, String name, String node) {
        Entry e = entries.get(uid);
        if (e == null) {
            return new BindPlan.Refuse(BindPlan.Cause.NOT_RESERVED, "no GPU is reserved for PodUID " + uid
                    + " (the reservation expired or the extender restarted); it will be placed again");
        }
        if (!Objects.equals(e.namespace(), namespace) || !Objects.equals(e.name(), name)) {
            return new BindPlan.Refuse(BindPlan.Cause.OTHER_POD, "PodNamespace/PodName " + namespace + "/" + name
                    + " is not the pod whose GPUs are reserved under PodUID " + uid + "; must be " + e.namespace() + "/"
                    + e.name());
        }
        if (e.phase() != Phase.RESERVED) {
            return new BindPlan.Refuse(BindPlan.Cause.BINDING_OR_BOUND, "pod " + namespace + "/" + name + " is "
                    + (e.phase() == Phase.BINDING ? "being bound" : "bound") + " to node "
                    + placement(uid).map(PlacementDecision.Placed::node).orElse("?") + " already");
        }
        PlacementDecision.Placed placed = placement(uid).orElseThrow();
        if (!placed.node().equals(node)) {
            return new BindPlan.Refuse(BindPlan.Cause.OTHER_NODE,
                    "the pod's GPUs are reserved on node " + placed.node() + ", not " + node);
        }
        entries.put(uid, e.in(Phase.BINDING, Instant.MAX));
        return new BindPlan.Assign(PodSlots.assignment(placed, e.split()));
    }

    public synchronized void bindSucceeded(String uid) {
        Entry e = entries.get(uid);
        if (e != null) {
            entries.put(uid, e.in(Phase.BOUND, Instant.MAX));
        }
    }

    /** Takes the GPUs back: the pod will be filtered again. */
    public synchronized void bindFailed(String uid) {
        drop(uid);
    }

    // ---- reads ----

    public synchronized List<ClusterState.GpuUsage> activeUsage() {
        refresh();
        return book.state().activeUsage();
    }

    public synchronized Map<Phase, Long> bookings() {
        Map<Phase, Long> count = new HashMap<>();
        entries.values().forEach(e -> count.merge(e.phase(), 1L, Long::sum));
        return count;
    }

    public synchronized int nodeCount() {
        return nodes.size();
    }

    public synchronized Optional<PlacementDecision.Placed> placement(String uid) {
        return book.booking(uid).map(InstanceBook.Booking::placed);
    }
}
