package io.dilu.autoscaler.decide;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A revision's pods as one tick sees them, and what parking asks of them: which pods serve, which are parked, which to
 * scrape, and the writes that bring them to the tick's decision ({@link #plan}). A pure function of the pods and the
 * decision; the reconciler reads the pods and writes the plan. Only a pod with the readiness gate on {@code
 * dilu.io/serving} (the webhook gives it to pods of Dilu's class) is parked: without it a parked pod would stay in the
 * request path with no SM booked.
 *
 * <p>A pod is <em>parked</em> while it carries {@code dilu.io/parked} (its SM booking given back, out of the request
 * path: its {@code dilu.io/serving} condition, a readiness gate, is False), <em>serving</em> while it is Ready and
 * neither parked nor refused a wake, and otherwise starting or waking. The revision's last instance, parked when the
 * decision wants no serving one, stays in the request path (its condition True): it answers the next request from
 * the GPU's idle SMs while its wake books its share back. Where the decision keeps it (the revision may not reach zero)
 * its condition says so ({@code DiluNames.SERVING_KEPT_REASON}), and the scheduler extender keeps its GPU.
 */
public record RevisionPods(List<PodState> pods) {

    public RevisionPods {
        pods = List.copyOf(pods);
    }

    /** Where a pod's {@code dilu.io/serving} condition puts it: out of the request path, in it, or kept in it. */
    public enum Path {
        OUT, IN, KEPT
    }

    /**
     * One pod.
     *
     * @param ready its Ready condition is True (every container ready and every readiness gate True)
     * @param address its pod IP, or null before it has one
     * @param parkedAt when the autoscaler parked it ({@code dilu.io/parked}), empty when it is not parked
     * @param wakeAsked it carries {@code dilu.io/wake}: woken, the scheduler extender's answer not written yet
     * @param wakeFailed it carries {@code dilu.io/wake-failed}: its GPU had no room, it is to be deleted
     * @param gated it declares a readiness gate on {@code dilu.io/serving}, so that parking takes it out of the path
     * @param path where its {@code dilu.io/serving} condition puts it: False or absent is {@link Path#OUT}
     * @param deleting it is being deleted
     */
    public record PodState(String name, String uid, Instant created, boolean ready, String address,
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
    }

    /**
     * The writes that bring the pods to a decision of {@code desired} serving and {@code parked} parked instances.
     *
     * @param park serving pods to park (the newest first): {@code dilu.io/parked}
     * @param wake parked pods to wake (the most recently parked first): {@code dilu.io/parked} off, {@code dilu.io/wake}
     * @param serving parked pods whose {@code dilu.io/serving} condition must change, and to what: in the path (kept
     *     there where the decision keeps the last instance) for the one left in the request path, out for the others
     * @param delete pods whose wake was refused: the ReplicaSet replaces them, placed where there is room
     */
    public record Plan(List<PodState> park, List<PodState> wake, Map<PodState, Path> serving, List<PodState> delete) {

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
    }

    /** One write of a {@link Plan}, to one pod. */
    public sealed interface Intent {

        PodState pod();

        /** {@code dilu.io/parked} off, {@code dilu.io/wake} on. */
        record Wake(PodState pod) implements Intent { }

        /** {@code dilu.io/parked} on: its SM booking given back. */
        record Park(PodState pod) implements Intent { }

        /** Its {@code dilu.io/serving} condition set to {@code path}. */
        record Serving(PodState pod, Path path) implements Intent { }

        /** Deleted after its wake was refused: the ReplicaSet replaces it where there is room. */
        record Delete(PodState pod) implements Intent { }
    }

    /** A park or a wake the autoscaler wrote, at {@code at}, which the watch may not show yet. */
    public record Written(boolean parked, Instant at) {

        /** Whether the watch's copy of the pod shows this write. */
        public boolean shownBy(PodState p) {
            return p.deleting() || p.parkedAt().isPresent() == parked;
        }
    }

    /**
     * The pods with the autoscaler's own writes that the watch does not show yet, by UID: a pod parked a moment ago
     * counts as parked (were it counted as serving, the scaler would read its parked instance as evicted and let it
     * go), a pod woken a moment ago as waking (were it counted as parked, it would be woken twice).
     */
    public RevisionPods with(Map<String, Written> written) {
        return new RevisionPods(pods.stream().map(p -> {
            Written w = written.get(p.uid());
            if (w == null || w.shownBy(p)) {
                return p;
            }
            return new PodState(p.name(), p.uid(), p.created(), p.ready(), p.address(),
                    w.parked() ? Optional.of(w.at()) : Optional.empty(), !w.parked(), p.wakeFailed(), p.gated(),
                    p.path(), p.deleting());
        }).toList());
    }

    public int servingCount() {
        return (int) pods.stream().filter(PodState::serving).count();
    }

    public int parkedCount() {
        return (int) pods.stream().filter(PodState::parked).count();
    }

    /**
     * The pods to scrape: those that serve, and the parked one left in the request path (Ready with its condition True).
     * The other parked pods serve nothing.
     */
    public List<String> scraped() {
        return pods.stream().filter(p -> p.address() != null && !p.deleting() && p.ready()
                && (p.serving() || p.parked() && p.servingTrue())).map(PodState::address).toList();
    }

    /**
     * The writes for {@code desired} serving and {@code parked} parked instances, the last one kept in the request path
     * where {@code lastKept} ({@code RevisionScaler.Decision#lastKept}). A scale-out wakes parked pods before the
     * Deployment adds any; a scale-in parks serving pods up to {@code parked}; the rest of a change is the Deployment's
     * scale ({@code desired + parked}), from which the ReplicaSet removes pods that are not ready first, which are the
     * parked ones (and pods still starting).
     */
    public Plan plan(int desired, int parked, boolean lastKept) {
        List<PodState> parkedNow = pods.stream().filter(PodState::parked)
                .sorted(Comparator.comparing((PodState p) -> p.parkedAt().orElseThrow()).reversed()).toList();
        long active = pods.stream().filter(PodState::active).count();
        int wakes = (int) Math.min(parkedNow.size(), Math.max(0, desired - active));
        List<PodState> wake = parkedNow.subList(0, wakes);
        int stillParked = parkedNow.size() - wakes;
        int parks = (int) Math.min(Math.max(0, parked - stillParked), Math.max(0, active - desired));
        List<PodState> park = pods.stream().filter(p -> p.serving() && p.gated())
                .sorted(Comparator.comparing(PodState::created).reversed().thenComparing(PodState::name))
                .limit(parks).toList();
        // Parked after the writes, the most recently parked first: the newly parked, then the ones left.
        List<PodState> after = new ArrayList<>(park);
        after.addAll(parkedNow.subList(wakes, parkedNow.size()));
        Map<PodState, Path> serving = new LinkedHashMap<>();
        for (int i = 0; i < after.size(); i++) {
            PodState p = after.get(i);
            Path wanted = desired == 0 && i == 0 ? (lastKept ? Path.KEPT : Path.IN) : Path.OUT;
            // A pod parked now still has its condition True, as it served.
            Path current = park.contains(p) && p.path() == Path.OUT ? Path.IN : p.path();
            if (current != wanted) {
                serving.put(p, wanted);
            }
        }
        List<PodState> delete = pods.stream().filter(p -> !p.deleting() && p.wakeFailed()).toList();
        return new Plan(park, List.copyOf(wake), serving, delete);
    }
}
