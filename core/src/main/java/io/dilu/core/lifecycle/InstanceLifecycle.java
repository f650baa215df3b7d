package io.dilu.core.lifecycle;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * An instance's lifecycle, in one place: the phases an instance of a function goes through (starting, serving, parked
 * out of or in the request path, kept, waking, refused a wake, terminating), the transitions between them as data
 * ({@link #TRANSITIONS}), the one rule for which parked instance a wake takes ({@link #wake}), and the writes that
 * bring a revision's instances to a scaling decision, in the order they are to be made ({@link #plan}, {@link
 * Plan#intents}). Pure: a function of the instances as read, the writes not yet seen ({@link #with}) and the decision;
 * the autoscaler realizes the intents as API writes, the co-scaling model in memory.
 *
 * <p>An instance is <em>parked</em> while it carries {@code dilu.io/parked} (its SM booking given back, out of the
 * request path: its {@code dilu.io/serving} condition, a readiness gate, is False), <em>serving</em> while it is Ready
 * and neither parked nor refused a wake, and otherwise starting or waking. Only an instance with the readiness gate on
 * {@code dilu.io/serving} (the webhook gives it to pods of Dilu's class) is parked: without it a parked pod would stay
 * in the request path with no SM booked. The revision's last instance, parked when the decision wants no serving one,
 * stays in the request path (its condition True): it answers the next request from the GPU's idle SMs while its wake
 * books its share back. Where the decision keeps it (the revision may not reach zero) its condition says so ({@code
 * DiluNames.SERVING_KEPT_REASON}), and the scheduler extender keeps its GPU.
 */
public record InstanceLifecycle(List<Instance> instances) {

    public InstanceLifecycle {
        instances = List.copyOf(instances);
    }

    /** Where an instance is in its lifecycle, as its facts ({@link Instance}) say. */
    public enum Phase {
        /** Created, not Ready yet (a cold start). */
        STARTING,
        /** Ready, in the request path, its SM share booked. */
        SERVING,
        /** Asked to wake: its share being booked again where its memory is. */
        WAKING,
        /** Its wake found no room where its memory is: booked at its memory until it is deleted. */
        REFUSED,
        /** Parked, out of the request path: it holds its memory only. */
        PARKED_OUT,
        /** Parked and left in the request path: the revision's last one, answering from the GPU's idle SMs. */
        PARKED_IN,
        /** As {@link #PARKED_IN}, kept because the revision may not reach zero: its GPU is kept for it. */
        KEPT,
        /** Being deleted (scaled in, evicted for its memory, or refused a wake): its booking stays until it is gone. */
        TERMINATING
    }

    /** What moves an instance from one phase to another. */
    public enum Cause {
        /** Its containers became ready, or its wake was answered. */
        READY,
        /** The autoscaler parked it. */
        PARK,
        /** The autoscaler moved its {@code dilu.io/serving} condition (out of, into, or kept in the request path). */
        PATH,
        /** The autoscaler woke it. */
        WAKE,
        /** The scheduler extender refused its wake: no room where its memory is. */
        REFUSE,
        /** The scheduler extender took its memory for a placement. */
        EVICT,
        /** Deleted: scaled in, or replaced after a refused wake. */
        DELETE
    }

    /** One allowed move. */
    public record Transition(Phase from, Cause cause, Phase to) {}

    /**
     * Every move an instance may make; any other is a bug in whoever made it. A park leaves the condition as it was
     * (True: it served), so a parked instance enters {@link Phase#PARKED_IN} and its path is written after, or {@link
     * Phase#KEPT} where the kept mark was written before the park (a serving instance may carry it a moment); an
     * instance refused a wake is parked again (or deleted) by the autoscaler, one waking only once its wake is answered.
     */
    public static final List<Transition> TRANSITIONS = transitions();

    private static List<Transition> transitions() {
        List<Transition> t = new ArrayList<>(List.of(
                new Transition(Phase.STARTING, Cause.READY, Phase.SERVING),
                new Transition(Phase.SERVING, Cause.PARK, Phase.PARKED_IN),
                new Transition(Phase.SERVING, Cause.PARK, Phase.KEPT),
                new Transition(Phase.WAKING, Cause.READY, Phase.SERVING),
                new Transition(Phase.WAKING, Cause.REFUSE, Phase.REFUSED),
                new Transition(Phase.REFUSED, Cause.PARK, Phase.PARKED_OUT),
                new Transition(Phase.REFUSED, Cause.PARK, Phase.PARKED_IN),
                new Transition(Phase.REFUSED, Cause.PARK, Phase.KEPT)));
        Set<Phase> parked = EnumSet.of(Phase.PARKED_OUT, Phase.PARKED_IN, Phase.KEPT);
        for (Phase from : parked) {
            t.add(new Transition(from, Cause.WAKE, Phase.WAKING));
            t.add(new Transition(from, Cause.EVICT, Phase.TERMINATING));
            for (Phase to : parked) {
                if (to != from) {
                    t.add(new Transition(from, Cause.PATH, to));
                }
            }
        }
        for (Phase from : Phase.values()) {
            if (from != Phase.TERMINATING) {
                t.add(new Transition(from, Cause.DELETE, Phase.TERMINATING));
            }
        }
        return List.copyOf(t);
    }

    /** Whether an instance may move from {@code from} to {@code to} (staying put always may). */
    public static boolean allows(Phase from, Phase to) {
        return from == to || TRANSITIONS.stream().anyMatch(t -> t.from() == from && t.to() == to);
    }

    /** Where a pod's {@code dilu.io/serving} condition puts it: out of the request path, in it, or kept in it. */
    public enum Path {
        OUT, IN, KEPT
    }

    /**
     * One instance (a pod), as read.
     *
     * @param name its name, for logs and writes
     * @param uid who it is: a pod re-created under the same name is another instance
     * @param created when it was created (a scale-in parks the newest first)
     * @param ready its Ready condition is True (every container ready and every readiness gate True)
     * @param address where its own readings are scraped (its pod IP), or null before it has one
     * @param parkedAt when the autoscaler parked it ({@code dilu.io/parked}), empty when it is not parked
     * @param wakeAsked it carries {@code dilu.io/wake}: woken, the scheduler extender's answer not written yet
     * @param wakeFailed it carries {@code dilu.io/wake-failed}: its GPU had no room when it was woken
     * @param gated it declares a readiness gate on {@code dilu.io/serving}, so that parking takes it out of the path
     * @param path where its {@code dilu.io/serving} condition puts it: False or absent is {@link Path#OUT}
     * @param deleting it is being deleted
     */
    public record Instance(String name, String uid, Instant created, boolean ready, String address,
            Optional<Instant> parkedAt, boolean wakeAsked, boolean wakeFailed, boolean gated, Path path,
            boolean deleting) {

        /** Its {@code dilu.io/serving} condition is True. */
        boolean servingTrue() {
            return path != Path.OUT;
        }

        boolean parked() {
            return !deleting && parkedAt.isPresent();
        }

        /** Not parked, not refused: serving, starting or waking. */
        boolean active() {
            return !deleting && parkedAt.isEmpty() && !wakeFailed;
        }

        boolean serving() {
            return active() && ready && !wakeAsked;
        }

        /** Refused a wake and not deleted yet: booked at its memory, as a parked one is. */
        boolean refused() {
            return !deleting && wakeFailed && parkedAt.isEmpty();
        }

        /**
         * This instance with its lifecycle facts changed. Once it has started, Ready follows its {@code dilu.io/serving}
         * condition, as the kubelet computes it for a pod with the readiness gate.
         */
        public Instance withFacts(Optional<Instant> parkedAt, boolean wakeAsked, boolean wakeFailed, Path path,
                boolean deleting) {
            boolean started = ready || this.parkedAt.isPresent() || this.wakeAsked || this.wakeFailed;
            return new Instance(name, uid, created, started && path != Path.OUT, address, parkedAt, wakeAsked, wakeFailed,
                    gated, path, deleting);
        }

        public Phase phase() {
            if (deleting) {
                return Phase.TERMINATING;
            }
            if (parkedAt.isPresent()) {
                return switch (path) {
                    case OUT -> Phase.PARKED_OUT;
                    case IN -> Phase.PARKED_IN;
                    case KEPT -> Phase.KEPT;
                };
            }
            if (wakeFailed) {
                return Phase.REFUSED;
            }
            if (wakeAsked) {
                return Phase.WAKING;
            }
            return ready ? Phase.SERVING : Phase.STARTING;
        }
    }

    /**
     * The order in which a ReplicaSet scaled down removes its pods, as far as their lifecycle tells them apart: those not
     * ready first (starting, parked out of the request path, refused a wake), then the newest first. The parked pods a
     * scale lowered by them lets go are therefore the ones out of the request path; the one left in it, Ready, goes
     * after the serving ones.
     */
    public static final Comparator<Instance> REPLICA_SET_REMOVES_FIRST = Comparator.comparing(Instance::ready)
            .thenComparing(Instance::created, Comparator.reverseOrder()).thenComparing(Instance::name);

    /**
     * The one wake rule, for the autoscaler and the co-scaling model alike: the parked instances are tried the most
     * recently parked first (its memory is the likeliest still where its GPU has room, and the least recently parked
     * is the one the history expects back the least), and the first whose share can be booked again wakes. When none
     * can, the least recently parked is replaced: it goes, and a new instance is placed wherever there is room (a
     * failed wake, counted as a cold start). Tried in that order, the model's seeds 42 to 48 of the co-scaling fleet
     * make a fifth fewer failed wakes than waking only the most recently parked and replacing it when refused
     * (1,940 against 2,394 on its {@code dilu} policy; docs/coscaling.md, "One wake rule").
     *
     * @param parked the parked instances, the least recently parked first
     * @param books tries to book an instance's wake where its memory is; true when it did (then it is the one woken)
     * @return the instance woken, or the one to replace; empty when there is none parked
     */
    public static <T> Optional<Wake<T>> wake(List<T> parked, Predicate<T> books) {
        for (int i = parked.size() - 1; i >= 0; i--) {
            if (books.test(parked.get(i))) {
                return Optional.of(new Wake<>(parked.get(i), true));
            }
        }
        return parked.isEmpty() ? Optional.empty() : Optional.of(new Wake<>(parked.getFirst(), false));
    }

    /** What {@link #wake} chose: {@code instance} woken, or (not {@code woken}) to be replaced by a new one. */
    public record Wake<T>(T instance, boolean woken) {}

    /**
     * The writes that bring the pods to a decision of {@code desired} serving and {@code parked} parked instances.
     *
     * @param park serving pods to park (the newest first), then pods refused a wake to park again: {@code dilu.io/parked}
     * @param wake parked pods to wake, in the order of {@link #wake}: {@code dilu.io/parked} off, {@code dilu.io/wake}
     * @param serving parked pods whose {@code dilu.io/serving} condition must change, and to what: in the path (kept
     *     there where the decision keeps the last instance) for the one left in the request path, out for the others
     * @param delete pods refused a wake that a scale-out still wanting instances replaces: the ReplicaSet places new
     *     ones where there is room
     */
    public record Plan(List<Instance> park, List<Instance> wake, Map<Instance, Path> serving, List<Instance> delete) {

        public boolean any() {
            return !park.isEmpty() || !wake.isEmpty() || !serving.isEmpty() || !delete.isEmpty();
        }

        /**
         * The writes, in the order they are to be made: the wakes; the kept mark of a last instance to keep, before any
         * park (parked and not yet marked kept, it is one the scheduler extender may hand back with a GPU that nothing
         * else holds); the parks; the other {@code dilu.io/serving} changes; the deletions of pods refused a wake.
         */
        public List<Intent> intents() {
            List<Intent> in = new ArrayList<>();
            wake.forEach(p -> in.add(new Intent.Wake(p)));
            serving.forEach((p, path) -> {
                if (path == Path.KEPT) {
                    in.add(new Intent.Serving(p, path));
                }
            });
            park.forEach(p -> in.add(new Intent.Park(p)));
            serving.forEach((p, path) -> {
                if (path != Path.KEPT) {
                    in.add(new Intent.Serving(p, path));
                }
            });
            delete.forEach(p -> in.add(new Intent.Delete(p)));
            return List.copyOf(in);
        }

        /**
         * Carries the intents out in their order by {@code write}, which makes one and says whether it was made. A pod
         * whose write failed gets none of its later ones: were a failed park followed by its move out of the request
         * path, the pod would serve with its condition False. The next tick plans again from what the pods then say.
         *
         * @return the intents made
         */
        public List<Intent> realize(Predicate<Intent> write) {
            List<Intent> made = new ArrayList<>();
            Set<String> failed = new HashSet<>();
            for (Intent intent : intents()) {
                if (failed.contains(intent.pod().uid())) {
                    continue;
                }
                if (write.test(intent)) {
                    made.add(intent);
                } else {
                    failed.add(intent.pod().uid());
                }
            }
            return List.copyOf(made);
        }
    }

    /** One write of a {@link Plan}, to one pod. */
    public sealed interface Intent {

        Instance pod();

        /** {@code dilu.io/parked} off, {@code dilu.io/wake} on. */
        record Wake(Instance pod) implements Intent { }

        /** {@code dilu.io/parked} on: its SM booking given back. */
        record Park(Instance pod) implements Intent { }

        /** Its {@code dilu.io/serving} condition set to {@code path}. */
        record Serving(Instance pod, Path path) implements Intent { }

        /** Deleted after its wake was refused: the ReplicaSet replaces it where there is room. */
        record Delete(Instance pod) implements Intent { }
    }

    /** A park or a wake the autoscaler wrote, at {@code at}, which the watch may not show yet. */
    public record Written(boolean parked, Instant at) {

        /** Whether the watch's copy of the pod shows this write. */
        public boolean shownBy(Instance p) {
            return p.deleting() || p.parkedAt().isPresent() == parked;
        }
    }

    /**
     * The pods with the autoscaler's own writes that the watch does not show yet, by UID: a pod parked a moment ago
     * counts as parked (were it counted as serving, the scaler would read its parked instance as evicted and let it
     * go), a pod woken a moment ago as waking (were it counted as parked, it would be woken twice).
     */
    public InstanceLifecycle with(Map<String, Written> written) {
        return new InstanceLifecycle(instances.stream().map(p -> {
            Written w = written.get(p.uid());
            if (w == null || w.shownBy(p)) {
                return p;
            }
            return new Instance(p.name(), p.uid(), p.created(), p.ready(), p.address(),
                    w.parked() ? Optional.of(w.at()) : Optional.empty(), !w.parked(), false, p.gated(),
                    p.path(), p.deleting());
        }).toList());
    }

    public int servingCount() {
        return (int) instances.stream().filter(Instance::serving).count();
    }

    /** Instances holding their memory only: the parked, and those refused a wake (parked again or replaced). */
    public int parkedCount() {
        return (int) instances.stream().filter(p -> p.parked() || p.refused()).count();
    }

    /**
     * The pods to scrape: those that serve, and the parked one left in the request path (Ready with its condition True).
     * The other parked pods serve nothing.
     */
    public List<String> scraped() {
        return instances.stream().filter(p -> p.address() != null && !p.deleting() && p.ready()
                && (p.serving() || p.parked() && p.servingTrue())).map(Instance::address).toList();
    }

    /**
     * The writes for {@code desired} serving and {@code parked} parked instances, the last one kept in the request path
     * where {@code lastKept} ({@code RevisionScaler.Decision#lastKept}). A scale-out wakes parked instances before the
     * Deployment adds any, by the one wake rule ({@link #wake}): here room is learned from the scheduler extender's
     * answers, so an instance refused a wake counts as one that cannot book, tried after every parked one; while the
     * scale-out still wants instances the refused ones are replaced (deleted: the ReplicaSet places new ones where
     * there is room), and once it wants none they are parked again, to be tried again by a later wake. A scale-in parks
     * serving instances up to {@code parked}; the rest of a change is the Deployment's scale ({@code desired + parked}),
     * from which the ReplicaSet removes pods that are not ready first, which are the parked ones (and pods still
     * starting).
     */
    public Plan plan(int desired, int parked, boolean lastKept) {
        // Tried last by the wake rule, which tries the most recently parked first: the refused ones, then the parked.
        List<Instance> candidates = new ArrayList<>(instances.stream().filter(Instance::refused)
                .sorted(Comparator.comparing(Instance::created).thenComparing(Instance::name)).toList());
        candidates.addAll(instances.stream().filter(Instance::parked)
                .sorted(Comparator.comparing((Instance p) -> p.parkedAt().orElseThrow()).thenComparing(Instance::name))
                .toList());
        long active = instances.stream().filter(Instance::active).count();
        int wanted = (int) Math.max(0, desired - active);
        List<Instance> wake = new ArrayList<>();
        List<Instance> replace = new ArrayList<>();
        while (wake.size() + replace.size() < wanted) {
            Optional<Wake<Instance>> w = wake(candidates, p -> !p.wakeFailed());
            if (w.isEmpty()) {
                break;
            }
            candidates.remove(w.get().instance());
            (w.get().woken() ? wake : replace).add(w.get().instance());
        }
        List<Instance> repark = wanted == 0 ? candidates.stream().filter(Instance::refused).toList() : List.of();
        // Only serving instances park, and never below the decision: were instances still starting or waking counted,
        // a scale-in would park the ready ones and leave the revision nothing to serve with until the others are ready.
        int parks = (int) Math.min(Math.max(0, parked - candidates.size()), Math.max(0, servingCount() - desired));
        List<Instance> park = instances.stream().filter(p -> p.serving() && p.gated())
                .sorted(Comparator.comparing(Instance::created).reversed().thenComparing(Instance::name))
                .limit(parks).toList();
        // Parked after the writes, the most recently parked first: the newly parked, the parked again, the ones left.
        List<Instance> after = new ArrayList<>(park);
        after.addAll(repark);
        after.addAll(candidates.reversed().stream().filter(Instance::parked).toList());
        Map<Instance, Path> serving = new LinkedHashMap<>();
        for (int i = 0; i < after.size(); i++) {
            Instance p = after.get(i);
            Path goal = desired == 0 && i == 0 ? (lastKept ? Path.KEPT : Path.IN) : Path.OUT;
            // A pod parked now still has its condition True, as it served.
            Path current = park.contains(p) && p.path() == Path.OUT ? Path.IN : p.path();
            if (current != goal) {
                serving.put(p, goal);
            }
        }
        List<Instance> parking = new ArrayList<>(park);
        parking.addAll(repark);
        return new Plan(List.copyOf(parking), List.copyOf(wake), serving, List.copyOf(replace));
    }
}
