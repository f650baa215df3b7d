package io.dilu.extender.state;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.placement.Apportion;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.ParkedEviction;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.placement.Slot;
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
 * <p><b>Parking.</b> A pod the autoscaler parked ({@code dilu.io/parked}) is booked at its memory alone: its SM
 * request and limit go to new placements, its memory stays hard (Algorithm 1's constraint 4). Unparked — a wake, asked
 * by {@code dilu.io/wake} — it takes its SM request and limit back where its GPUs have room by the placement's own
 * rule ({@link ComplementaryPlacement#refusal}); where they have none the wake is refused, with the reason, and the pod
 * stays booked at its memory ({@code dilu.io/wake-failed}) until the autoscaler deletes it. A placement that finds no
 * room takes parked pods whose memory would make it ({@link ParkedEviction}) out of the book first, and tells the
 * caller to delete them; if it still finds none they are booked again.
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
     * A booking, with the pod it was made for: bind must name that same pod, not only its UID.
     *
     * @param placed what the pod holds when it serves; parked, only the slots' memory is booked
     * @param parked booked at its memory alone: parked, or its wake refused
     * @param parkedAt when it was parked, for the least recently parked to go first
     * @param wakeRefusal why its wake found no room, once decided
     */
    private record Entry(String namespace, String name, String function, PlacementDecision.Placed placed, boolean split,
            Phase phase, Instant expires, boolean parked, Instant parkedAt, Optional<String> wakeRefusal) {

        Entry(String namespace, String name, String function, PlacementDecision.Placed placed, boolean split, Phase phase,
                Instant expires) {
            this(namespace, name, function, placed, split, phase, expires, false, Instant.EPOCH, Optional.empty());
        }

        Entry in(Phase next, Instant until) {
            return new Entry(namespace, name, function, placed, split, next, until, parked, parkedAt, wakeRefusal);
        }

        Entry parkedSince(Instant at) {
            return new Entry(namespace, name, function, placed, split, phase, expires, true, at, Optional.empty());
        }

        Entry serving() {
            return new Entry(namespace, name, function, placed, split, phase, expires, false, parkedAt, Optional.empty());
        }

        Entry refused(String reason) {
            return new Entry(namespace, name, function, placed, split, phase, expires, true, parkedAt, Optional.of(reason));
        }

        /** What is booked of it: all of {@link #placed}, or parked its slots' memory alone. */
        PlacementDecision.Placed booked() {
            return parked ? new PlacementDecision.Placed(placed.node(), placed.slots().stream()
                    .map(s -> new Slot(s.gpuUuid(), 0, 0, s.memoryMib())).toList()) : placed;
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

    /**
     * Where a pod stands in the book after an observation.
     *
     * @param kind not booked, booked in full (its SM request held: it may serve), or at its memory alone
     * @param wakeRefusal a parked pod's refused wake, with why: to be written as {@code dilu.io/wake-failed}
     * @param wakeDecided this observation decided a wake (woken or refused), for counting
     */
    public record Standing(Kind kind, Optional<String> wakeRefusal, boolean wakeDecided) {

        public enum Kind { NONE, SERVING, PARKED }

        static final Standing NONE = new Standing(Kind.NONE, Optional.empty(), false);
        static final Standing SERVING = new Standing(Kind.SERVING, Optional.empty(), false);
    }

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

    private final ComplementaryPlacement policy;
    private final long defaultMemoryMib;
    private final Duration reservationTtl;
    private final TreeMap<String, NodeInventory> nodes = new TreeMap<>();
    private final Map<String, Entry> entries = new LinkedHashMap<>();
    private final Set<String> inState = new HashSet<>();
    /** Parked pods evicted for a placement, until the watch shows them gone: they are not booked again. */
    private final Set<String> evicted = new HashSet<>();
    /**
     * Parked pods kept in the request path as the last instance of a revision that may not reach zero: never handed back
     * with their GPU.
     */
    private final Set<String> kept = new HashSet<>();
    private ClusterState state = new ClusterState(List.of());
    private boolean dirty;

    public PlacementBook(PlacementParameters params, long defaultMemoryMib, Duration reservationTtl) {
        this.policy = new ComplementaryPlacement(params);
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
        state = new ClusterState(usable);
        inState.clear();
        entries.forEach((uid, e) -> book(uid, e));
    }

    private boolean book(String uid, Entry e) {
        try {
            state.apply(uid, e.function(), e.booked());
            inState.add(uid);
            return true;
        } catch (IllegalArgumentException | IllegalStateException ex) {
            // A GPU that no inventory lists (yet) or a node that is over its memory: keep the entry, book it
            // when the node is back, and let nothing else onto those GPUs meanwhile.
            LOG.debugf("cannot book %s on %s: %s", uid, e.placed().node(), ex.getMessage());
            return false;
        }
    }

    private void drop(String uid) {
        if (entries.remove(uid) != null && inState.remove(uid)) {
            state.release(uid);
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
            kept.remove(pod.uid());
            return Standing.NONE;
        }
        if (pod.parkedKept()) {
            kept.add(pod.uid());
        } else {
            kept.remove(pod.uid());
        }
        if (evicted.contains(pod.uid()) || pod.nodeName().isEmpty() || pod.assigned().isEmpty()) {
            // evicted (its memory is another pod's), not bound yet, or bound without Dilu (the node agent will annotate it)
            return Standing.NONE;
        }
        Optional<PlacementDecision.Placed> actual = placedOf(pod, pod.nodeName().get(), pod.assigned().get());
        if (actual.isEmpty()) {
            return Standing.NONE;
        }
        refresh();
        boolean memoryOnly = pod.parked() || pod.wakeFailed();
        Entry before = entries.get(pod.uid());
        Entry e;
        if (before != null && before.placed().equals(actual.get())) {
            e = before.in(Phase.BOUND, before.expires());
            entries.put(pod.uid(), e);
        } else {
            drop(pod.uid());
            // Seen for the first time (or a restart): parked, or asked to wake, it is booked at its memory first, and a
            // wake takes its SMs back only where there is room.
            e = new Entry(pod.namespace(), pod.name(), pod.function(), actual.get(), pod.assigned().get().isSplit(),
                    Phase.BOUND, Instant.MAX);
            if (memoryOnly || pod.wakeAsked()) {
                e = e.parkedSince(pod.parkedAt());
            }
            entries.put(pod.uid(), e);
            book(pod.uid(), e);
        }
        if (pod.parked() && (!e.parked() || e.wakeRefusal().isPresent() || !e.parkedAt().equals(pod.parkedAt()))) {
            rebook(pod.uid(), e.parkedSince(pod.parkedAt())); // parked (again): its SMs go back to the placement
            return new Standing(Standing.Kind.PARKED, Optional.empty(), false);
        }
        if (memoryOnly) {
            return new Standing(Standing.Kind.PARKED, e.wakeRefusal(), false);
        }
        if (e.parked() && e.wakeRefusal().isPresent()) {
            // Refused already, the answer not yet written: the decision stands until the pod is parked again or goes.
            return new Standing(Standing.Kind.PARKED, e.wakeRefusal(), false);
        }
        return e.parked() ? wake(pod.uid(), e) : Standing.SERVING;
    }

    /**
     * A parked pod no longer parked: its SM request and limit back on each of its GPUs where the placement's rule finds
     * room beside what is booked there now (its memory is booked already); refused, with the reasons, otherwise.
     */
    private Standing wake(String uid, Entry e) {
        List<String> refusals = new ArrayList<>();
        if (!inState.contains(uid)) {
            refusals.add("its GPUs " + e.placed().slots().stream().map(Slot::gpuUuid).toList()
                    + " are not in the book (no node agent lists them)");
        } else {
            for (Slot s : e.placed().slots()) {
                policy.refusal(state, new Slot(s.gpuUuid(), s.requestMilli(), s.limitMilli(), 0)).ifPresent(refusals::add);
            }
        }
        if (!refusals.isEmpty()) {
            String reason = "no room to serve again: " + String.join("; ", refusals);
            entries.put(uid, e.refused(reason));
            return new Standing(Standing.Kind.PARKED, Optional.of(reason), true);
        }
        rebook(uid, e.serving());
        return new Standing(Standing.Kind.SERVING, Optional.empty(), true);
    }

    private void rebook(String uid, Entry e) {
        if (inState.remove(uid)) {
            state.release(uid);
        }
        entries.put(uid, e);
        book(uid, e);
    }

    /** The pod is gone from the API server. */
    public synchronized void forget(String uid) {
        drop(uid);
        evicted.remove(uid);
        kept.remove(uid);
    }

    /**
     * The annotation for a placement: one GPU per container, or for a split container each stage's GPU with its
     * percent and memory (core apportions a whole-percent request in whole percents).
     */
    static AssignedGpus assignment(PlacementDecision.Placed placed, boolean split) {
        if (split && placed.slots().size() > 1) {
            return AssignedGpus.split(placed.slots().stream()
                    .map(s -> new AssignedGpus.Stage(s.gpuUuid(), s.requestMilli() / 10, s.memoryMib())).toList());
        }
        return AssignedGpus.ofContainers(placed.slots().stream().map(Slot::gpuUuid).toList());
    }

    /** What a split container holds: each stage as written, its limit as core's placement gave it. */
    private static Optional<PlacementDecision.Placed> stagesOf(PodShare pod, String node, AssignedGpus assigned) {
        if (pod.containers().size() != 1) {
            return Optional.empty();
        }
        int limit = PodQuotaAnnotations.smLimit(pod.annotations(), pod.containers().getFirst().smPercent());
        int[] requests = assigned.stages().stream().mapToInt(AssignedGpus.Stage::smPercent).toArray();
        long[] memory = assigned.stages().stream().mapToLong(AssignedGpus.Stage::memoryMib).toArray();
        int[] limits = Apportion.stageLimits(limit, requests, memory);
        List<Slot> slots = new ArrayList<>();
        for (int i = 0; i < assigned.stages().size(); i++) {
            AssignedGpus.Stage s = assigned.stages().get(i);
            slots.add(new Slot(s.uuid(), s.smPercent() * 10, limits[i] * 10, s.memoryMib()));
        }
        return Optional.of(new PlacementDecision.Placed(node, slots));
    }

    /** What a bound pod holds: container i on the i-th GPU of its assignment, shares on one GPU summed. */
    private Optional<PlacementDecision.Placed> placedOf(PodShare pod, String node, AssignedGpus assigned) {
        if (assigned.isSplit()) {
            return stagesOf(pod, node, assigned);
        }
        Map<String, long[]> perGpu = new LinkedHashMap<>();
        for (int i = 0; i < pod.containers().size(); i++) {
            PodShare.Container c = pod.containers().get(i);
            Optional<String> gpu = assigned.forContainer(i);
            if (gpu.isEmpty() || c.smPercent() < 1 || c.smPercent() > 100) {
                return Optional.empty();
            }
            long[] sum = perGpu.computeIfAbsent(gpu.get(), g -> new long[3]);
            sum[0] += c.smPercent() * 10L;
            sum[1] += PodQuotaAnnotations.smLimit(pod.annotations(), c.smPercent()) * 10L;
            sum[2] += c.memoryMib().orElse(defaultMemoryMib);
        }
        List<Slot> slots = new ArrayList<>();
        perGpu.forEach((gpu, s) -> slots.add(new Slot(gpu, (int) s[0], (int) s[1], s[2])));
        return Optional.of(new PlacementDecision.Placed(node, slots));
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
            return chosen(held.placed().node(), candidates);
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
        PlacementDecision decision = policy.decide(state, request, known);
        List<Evicted> gone = List.of();
        if (decision instanceof PlacementDecision.Infeasible) {
            List<String> victims = ParkedEviction.victims(state, pod.namespace(), request.memoryMib(),
                    parkedBeside(request, known)).stream().map(ParkedEviction.Parked::id).distinct().toList();
            if (!victims.isEmpty()) {
                victims.forEach(uid -> {
                    if (inState.remove(uid)) {
                        state.release(uid);
                    }
                });
                PlacementDecision again = policy.decide(state, request, known);
                if (again instanceof PlacementDecision.Placed) {
                    decision = again;
                    gone = victims.stream().map(this::evict).toList();
                } else {
                    victims.forEach(uid -> book(uid, entries.get(uid)));
                }
            }
        }
        if (decision instanceof PlacementDecision.Infeasible infeasible) {
            known.forEach(n -> failed.put(n, infeasible.reason()));
            return new Filtered(Optional.empty(), failed);
        }
        PlacementDecision.Placed placed = (PlacementDecision.Placed) decision;
        Entry e = new Entry(pod.namespace(), pod.name(), request.function(), placed, request.splittable(),
                Phase.RESERVED, now.plus(reservationTtl));
        entries.put(pod.uid(), e);
        book(pod.uid(), e);
        return new Filtered(Optional.of(placed.node()), failed, gone);
    }

    /**
     * The parked pods on the candidate nodes, one per GPU they hold memory on, where that GPU has room for the request's
     * SMs: freeing memory on a GPU whose SMs are booked up would evict for nothing.
     */
    private List<ParkedEviction.Parked> parkedBeside(InstanceRequest request, Collection<String> nodes) {
        Set<String> candidates = Set.copyOf(nodes);
        List<ParkedEviction.Parked> parked = new ArrayList<>();
        entries.forEach((uid, e) -> {
            if (e.parked() && e.phase() == Phase.BOUND && inState.contains(uid) && candidates.contains(e.placed().node())) {
                for (Slot s : e.placed().slots()) {
                    if (policy.refusal(state, new Slot(s.gpuUuid(), request.requestMilli(), request.limitMilli(), 0)).isEmpty()) {
                        parked.add(new ParkedEviction.Parked(uid, e.namespace(), s.gpuUuid(), s.memoryMib(), e.parkedAt()));
                    }
                }
            }
        });
        return parked;
    }

    /**
     * Parked pods on GPUs that nothing but parked pods holds ({@link ParkedEviction#alone}; a revision's last one kept in
     * the request path holds its GPU), taken out of the book for good: the caller deletes them, and their GPUs go back.
     * Asked after every change the watch shows, so that a GPU is handed back as soon as its last serving or reserved pod
     * leaves it.
     */
    public synchronized List<Evicted> handBack() {
        List<ParkedEviction.Parked> parked = new ArrayList<>();
        entries.forEach((uid, e) -> {
            if (e.parked() && e.phase() == Phase.BOUND && inState.contains(uid)) {
                e.placed().slots().forEach(s -> parked.add(new ParkedEviction.Parked(uid, e.namespace(), s.gpuUuid(),
                        s.memoryMib(), e.parkedAt(), kept.contains(uid))));
            }
        });
        if (parked.isEmpty()) {
            return List.of();
        }
        List<String> alone = ParkedEviction.alone(state, parked).stream().map(ParkedEviction.Parked::id).distinct().toList();
        alone.forEach(uid -> {
            inState.remove(uid);
            state.release(uid);
        });
        return alone.stream().map(this::evict).toList();
    }

    /** Takes a parked pod out of the book for good: it is to be deleted, and is not booked again while it goes. */
    private Evicted evict(String uid) {
        kept.remove(uid);
        Entry e = entries.remove(uid);
        evicted.add(uid);
        Slot first = e.placed().slots().getFirst();
        LOG.infof("parked pod %s/%s evicted: its %d MiB on GPU %s are freed", e.namespace(), e.name(),
                e.placed().slots().stream().mapToLong(Slot::memoryMib).sum(), first.gpuUuid());
        return new Evicted(uid, e.namespace(), e.name(), first.gpuUuid(),
                e.placed().slots().stream().mapToLong(Slot::memoryMib).sum(), e.parkedAt());
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
        return Optional.ofNullable(entries.get(uid)).map(e -> e.placed().node());
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
                    + (e.phase() == Phase.BINDING ? "being bound" : "bound") + " to node " + e.placed().node()
                    + " already");
        }
        if (!e.placed().node().equals(node)) {
            return new BindPlan.Refuse(BindPlan.Cause.OTHER_NODE,
                    "the pod's GPUs are reserved on node " + e.placed().node() + ", not " + node);
        }
        entries.put(uid, e.in(Phase.BINDING, Instant.MAX));
        return new BindPlan.Assign(assignment(e.placed(), e.split()));
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
        return state.activeUsage();
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
        return Optional.ofNullable(entries.get(uid)).map(Entry::placed);
    }
}
