package io.dilu.core.placement;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The booking side of an instance's lifecycle, in one place for the scheduler extender and the co-scaling fleet model:
 * what each instance books on one {@link ClusterState}, in full while it serves and at its memory alone while it is
 * parked; whether a wake fits where its memory is ({@link #wake}); which parked instances a placement that finds no
 * room takes ({@link #place}, by {@link ParkedEviction#victims}); which ones go with a GPU that nothing else holds
 * ({@link #handBack}, by {@link ParkedEviction#alone}). Explicitly owned mutable state, one per pool; not thread-safe.
 *
 * <p>A booking the state refuses (a GPU that no inventory lists yet, a node over its memory) is kept and booked again
 * when the state is rebuilt ({@link #rebuild}); meanwhile nothing else gets onto those GPUs through it.
 */
public final class InstanceBook {

    /**
     * One instance's booking.
     *
     * @param tenant whose it is (the namespace, in the cluster): a placement takes other tenants' parked memory last
     * @param placed what it holds when it serves; parked, only its slots' memory is booked
     * @param parkedAt when it was parked, for the least recently parked to go first; meaningful while {@code parked}
     * @param refusal why its last wake found no room; empty once it serves or is parked again
     */
    public record Booking(String tenant, String function, PlacementDecision.Placed placed, boolean parked,
            Instant parkedAt, Optional<String> refusal) {

        /** What the state books of it: all of {@link #placed}, or parked its slots' memory alone. */
        PlacementDecision.Placed booked() {
            return parked ? new PlacementDecision.Placed(placed.node(), placed.slots().stream()
                    .map(s -> new Slot(s.gpuUuid(), 0, 0, s.memoryMib())).toList()) : placed;
        }

        private Booking parkedSince(Instant at) {
            return new Booking(tenant, function, placed, true, at, Optional.empty());
        }
    }

    /** A parked instance taken out of the book for good: its memory on {@code gpu} is free; its owner deletes it. */
    public record Evicted(String id, String tenant, String gpu, long memoryMib, Instant parkedAt) {}

    /** A placement's decision, and the parked instances it took out of the book to make it. */
    public record Placement(PlacementDecision decision, List<Evicted> evicted) {}

    private final ComplementaryPlacement policy;
    private ClusterState state;
    /** In the order first booked: a rebuild books them again in that order, so the earliest keeps a node short of memory. */
    private final Map<String, Booking> bookings = new LinkedHashMap<>();
    /** The ids booked on the state now. */
    private final Set<String> inState = new HashSet<>();
    /** Parked instances in the order they were parked, the least recently parked first. */
    private final Set<String> parkedOrder = new LinkedHashSet<>();
    /** Parked instances kept in the request path as the last of a revision that may not reach zero. */
    private final Set<String> kept = new HashSet<>();
    /** Per GPU: serving (or starting) bookings, and parked ones. */
    private final Map<String, int[]> perGpu = new HashMap<>();
    private int parkedOnlyGpus;
    private long smRequestMilli;

    public InstanceBook(ComplementaryPlacement policy, ClusterState state) {
        this.policy = policy;
        this.state = state;
    }

    /** Books everything again on {@code fresh} (the nodes changed). */
    public void rebuild(ClusterState fresh) {
        state = fresh;
        inState.clear();
        perGpu.clear();
        parkedOnlyGpus = 0;
        smRequestMilli = 0;
        bookings.forEach(this::apply);
    }

    /** Books {@code id} in full, replacing any booking it had; false when the state refuses it (kept, see the class). */
    public boolean book(String id, String tenant, String function, PlacementDecision.Placed placed) {
        return put(id, new Booking(tenant, function, placed, false, Instant.EPOCH, Optional.empty()));
    }

    /** Books {@code id} at its memory alone, parked since {@code at}, replacing any booking it had. */
    public boolean bookParked(String id, String tenant, String function, PlacementDecision.Placed placed, Instant at) {
        return put(id, new Booking(tenant, function, placed, true, at, Optional.empty()));
    }

    /** Parks a booked instance (again): its SM shares go back, its memory stays. */
    public void park(String id, Instant at) {
        Booking b = require(id);
        put(id, b.parkedSince(at));
    }

    /**
     * Wakes a parked instance where its memory is: its SM request and limit on each of its GPUs, where the placement's
     * rule finds room beside what is booked there now ({@link ComplementaryPlacement#refusal}). Refused, it stays booked
     * at its memory, and the reasons are returned (and kept in its booking).
     */
    public Optional<String> wake(String id) {
        Booking b = require(id);
        if (!b.parked()) {
            return Optional.empty(); // serving already
        }
        List<String> refusals = new ArrayList<>();
        if (!inState.contains(id)) {
            refusals.add("its GPUs " + b.placed().slots().stream().map(Slot::gpuUuid).toList()
                    + " are not in the book (no node agent lists them)");
        } else {
            for (Slot s : b.placed().slots()) {
                policy.refusal(state, b.function(), new Slot(s.gpuUuid(), s.requestMilli(), s.limitMilli(), 0)).ifPresent(refusals::add);
            }
        }
        if (!refusals.isEmpty()) {
            String reason = "no room to serve again: " + String.join("; ", refusals);
            bookings.put(id, new Booking(b.tenant(), b.function(), b.placed(), true, b.parkedAt(), Optional.of(reason)));
            return Optional.of(reason);
        }
        put(id, new Booking(b.tenant(), b.function(), b.placed(), false, b.parkedAt(), Optional.empty()));
        return Optional.empty();
    }

    /** Whether a parked instance is its revision's last one kept in the request path: it keeps its GPU. */
    public void keep(String id, boolean keep) {
        if (keep) {
            kept.add(id);
        } else {
            kept.remove(id);
        }
    }

    /** Frees all an instance books; false when it had no booking. */
    public boolean release(String id) {
        Booking b = bookings.remove(id);
        if (b == null) {
            return false;
        }
        unapply(id, b);
        parkedOrder.remove(id);
        kept.remove(id);
        return true;
    }

    public Optional<Booking> booking(String id) {
        return Optional.ofNullable(bookings.get(id));
    }

    /** Whether the state books it now. */
    public boolean inState(String id) {
        return inState.contains(id);
    }

    /**
     * Decides a placement for {@code request} among {@code nodes} (all of the state's when empty) without booking it.
     * When none has room, the parked instances whose memory would make it on a GPU where the request's shares fit
     * ({@link ParkedEviction#victims}, {@code tenant}'s own first) are taken out and the placement is decided again:
     * placed, they are out of the book for good and returned; still not, they are booked again as they were.
     */
    public Placement place(InstanceRequest request, String tenant, Optional<Collection<String>> nodes) {
        PlacementDecision decision = decide(request, nodes);
        if (!(decision instanceof PlacementDecision.Infeasible) || parkedOrder.isEmpty()) {
            return new Placement(decision, List.of());
        }
        List<String> victims = ParkedEviction.victims(state, tenant, request.memoryMib(), parkedWhereSharesFit(request, nodes))
                .stream().map(ParkedEviction.Parked::id).distinct().toList();
        if (victims.isEmpty()) {
            return new Placement(decision, List.of());
        }
        victims.forEach(id -> unapply(id, bookings.get(id)));
        PlacementDecision again = decide(request, nodes);
        if (again instanceof PlacementDecision.Placed) {
            return new Placement(again, victims.stream().map(this::evict).toList());
        }
        victims.forEach(id -> apply(id, bookings.get(id)));
        return new Placement(decision, List.of());
    }

    /**
     * The parked instances on GPUs that nothing but parked instances holds and none of them kept, taken out of the book
     * for good ({@link ParkedEviction#alone}): their owners delete them, and the GPUs go back.
     */
    public List<Evicted> handBack() {
        if (parkedOnlyGpus == 0) {
            return List.of();
        }
        List<ParkedEviction.Parked> parked = new ArrayList<>();
        for (String id : parkedOrder) {
            Booking b = bookings.get(id);
            if (inState.contains(id)) {
                b.placed().slots().forEach(s -> parked.add(new ParkedEviction.Parked(id, b.tenant(), s.gpuUuid(),
                        s.memoryMib(), b.parkedAt(), kept.contains(id))));
            }
        }
        List<String> alone = ParkedEviction.alone(state, parked).stream().map(ParkedEviction.Parked::id).distinct().toList();
        alone.forEach(id -> unapply(id, bookings.get(id)));
        return alone.stream().map(this::evict).toList();
    }

    /** The bookings as the state holds them. */
    public ClusterState state() {
        return state;
    }

    /** GPUs that hold parked instances and nothing else. */
    public int parkedOnlyGpus() {
        return parkedOnlyGpus;
    }

    /** Σ of the SM requests booked in full. */
    public long smRequestMilli() {
        return smRequestMilli;
    }

    private PlacementDecision decide(InstanceRequest request, Optional<Collection<String>> nodes) {
        return nodes.map(n -> policy.decide(state, request, n)).orElseGet(() -> policy.decide(state, request));
    }

    /** Parked instances' memory on GPUs where {@code request}'s shares fit: memory there is all it lacks. */
    private List<ParkedEviction.Parked> parkedWhereSharesFit(InstanceRequest request, Optional<Collection<String>> nodes) {
        Set<String> candidates = nodes.map(Set::copyOf).orElse(null);
        List<ParkedEviction.Parked> out = new ArrayList<>();
        for (String id : parkedOrder) {
            Booking b = bookings.get(id);
            if (!inState.contains(id) || candidates != null && !candidates.contains(b.placed().node())) {
                continue;
            }
            for (Slot s : b.placed().slots()) {
                if (policy.refusal(state, request.function(), new Slot(s.gpuUuid(), request.requestMilli(), request.limitMilli(), 0)).isEmpty()) {
                    out.add(new ParkedEviction.Parked(id, b.tenant(), s.gpuUuid(), s.memoryMib(), b.parkedAt()));
                }
            }
        }
        return out;
    }

    /** Takes an instance unbooked already out of the book for good. */
    private Evicted evict(String id) {
        Booking b = bookings.remove(id);
        parkedOrder.remove(id);
        kept.remove(id);
        Slot first = b.placed().slots().getFirst();
        return new Evicted(id, b.tenant(), first.gpuUuid(), b.placed().slots().stream().mapToLong(Slot::memoryMib).sum(),
                b.parkedAt());
    }

    private Booking require(String id) {
        Booking b = bookings.get(id);
        if (b == null) {
            throw new IllegalArgumentException("instance " + id + " has no booking");
        }
        return b;
    }

    private boolean put(String id, Booking b) {
        Booking before = bookings.put(id, b);
        if (before != null) {
            unapply(id, before);
        }
        if (b.parked()) {
            parkedOrder.remove(id);
            parkedOrder.add(id);
        } else {
            parkedOrder.remove(id);
        }
        return apply(id, b);
    }

    private boolean apply(String id, Booking b) {
        try {
            state.apply(id, b.function(), b.booked());
        } catch (IllegalArgumentException | IllegalStateException e) {
            return false;
        }
        inState.add(id);
        count(b, +1);
        return true;
    }

    private void unapply(String id, Booking b) {
        if (inState.remove(id)) {
            state.release(id);
            count(b, -1);
        }
    }

    /** Keeps the SM booked and the GPUs that hold parked instances alone, as bookings come and go. */
    private void count(Booking b, int delta) {
        for (Slot s : b.placed().slots()) {
            int[] c = perGpu.computeIfAbsent(s.gpuUuid(), k -> new int[2]);
            boolean parkedOnlyBefore = c[0] == 0 && c[1] > 0;
            c[b.parked() ? 1 : 0] += delta;
            boolean parkedOnlyAfter = c[0] == 0 && c[1] > 0;
            parkedOnlyGpus += (parkedOnlyAfter ? 1 : 0) - (parkedOnlyBefore ? 1 : 0);
            smRequestMilli += b.parked() ? 0 : (long) delta * s.requestMilli();
        }
    }
}
