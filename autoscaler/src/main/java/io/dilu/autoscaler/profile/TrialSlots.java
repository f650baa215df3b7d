package io.dilu.autoscaler.profile;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Which profiles run their next trial now: the profiler's slots, given out fairly between namespaces. A pure decision
 * over what the profiler tells it (which profiles want a trial, which trials ended); time is passed in. Not
 * thread-safe: the profiler's scan thread alone calls it.
 *
 * <p>A slot is one trial (one setting, with its retries), not a whole search: after each trial a profile queues again.
 * The rule:
 * <ul>
 *   <li>at most {@link Limits#parallel} trials at once, at most {@link Limits#perNamespace} of them of one namespace;</li>
 *   <li>a free slot goes to the namespace served least recently (one never served first; ties by name), and within it
 *       to the profile served least recently (ties by creation, then name): round-robin over namespaces, then over
 *       each namespace's profiles, so a namespace with many profiles takes no more turns than one with one;</li>
 *   <li>at most {@link Limits#queuedPerNamespace} of a namespace's profiles are queued or running at once (the oldest);
 *       the rest are over quota, with a message saying why, until one of those ends.</li>
 * </ul>
 * A namespace that wants a trial therefore waits for at most K − 1 grants to others (K namespaces wanting), which the
 * slots get through in at most ⌈K / parallel⌉ times the longest a grant may hold its slot ({@link Limits#hold}).
 */
final class TrialSlots {

    /**
     * @param parallel trials at once, in all
     * @param perNamespace trials at once of one namespace
     * @param queuedPerNamespace profiles of one namespace queued or running at once
     * @param hold the longest one grant may keep its slot: its attempts' timeouts and a margin; past it the grant is
     *     {@linkplain #expired expired}
     */
    record Limits(int parallel, int perNamespace, int queuedPerNamespace, Duration hold) {
        Limits {
            Objects.requireNonNull(hold, "hold");
            if (parallel < 1) {
                throw new IllegalArgumentException("dilu.autoscaler.profiler.parallel must be at least 1, got " + parallel);
            }
            if (perNamespace < 1) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.profiler.max-trials-per-namespace must be at least 1, got " + perNamespace);
            }
            if (queuedPerNamespace < perNamespace) {
                throw new IllegalArgumentException("dilu.autoscaler.profiler.max-queued-per-namespace must be at least "
                        + "max-trials-per-namespace (" + perNamespace + "), got " + queuedPerNamespace);
            }
        }
    }

    /**
     * A profile that wants a trial.
     *
     * @param uid its identity: a profile deleted and made again is another
     * @param created its creation, for the order of a namespace's queue
     */
    record Profile(String namespace, String name, String uid, Instant created) {
        Profile {
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(uid, "uid");
            created = created == null ? Instant.MIN : created;
        }
    }

    /**
     * What to do now.
     *
     * @param start the profiles to run one trial each, now
     * @param overQuota the profiles left out by their namespace's quota, each with the reason
     */
    record Plan(List<Profile> start, Map<Profile, String> overQuota) {}

    private static final Comparator<Profile> BY_AGE = Comparator.comparing(Profile::created).thenComparing(Profile::name)
            .thenComparing(Profile::uid);

    /** A slot given: to whom, and when. */
    private record Grant(Profile profile, Instant since) {}

    /** Never served: before every grant. */
    private static final long NEVER = -1;

    private final Limits limits;
    /** The trials running, by profile uid. */
    private final Map<String, Grant> running = new HashMap<>();
    /**
     * The grant (its number, in the order given) last given to each namespace and each profile (by uid). Numbers, not
     * times: grants of one plan share a time, and a clock that steps back must not reorder turns.
     */
    private final Map<String, Long> namespaceServed = new HashMap<>();
    private final Map<String, Long> profileServed = new HashMap<>();
    private long grants;

    TrialSlots(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    /**
     * Gives the free slots out among the profiles that want a trial and are not running one, and says which are over
     * their namespace's quota. The profiles given a slot are running from now until {@link #finished}.
     */
    Plan plan(Collection<Profile> wanting, Instant now) {
        Map<String, List<Profile>> queued = new TreeMap<>();
        Map<Profile, String> overQuota = new LinkedHashMap<>();
        Map<String, List<Profile>> byNamespace = new TreeMap<>();
        for (Profile p : wanting) {
            if (!running.containsKey(p.uid())) {
                byNamespace.computeIfAbsent(p.namespace(), k -> new ArrayList<>()).add(p);
            }
        }
        for (Map.Entry<String, List<Profile>> e : byNamespace.entrySet()) {
            List<Profile> all = e.getValue();
            all.sort(BY_AGE);
            int room = Math.max(0, limits.queuedPerNamespace() - runningIn(e.getKey()));
            queued.put(e.getKey(), new ArrayList<>(all.subList(0, Math.min(room, all.size()))));
            for (Profile p : all.subList(Math.min(room, all.size()), all.size())) {
                overQuota.put(p, "namespace " + e.getKey() + " has " + limits.queuedPerNamespace() + " profiles queued or "
                        + "profiling, the most it may (dilu.autoscaler.profiler.max-queued-per-namespace); this one is "
                        + "queued when one of them is done");
            }
        }
        List<Profile> start = new ArrayList<>();
        while (running.size() < limits.parallel()) {
            String namespace = null;
            for (Map.Entry<String, List<Profile>> e : queued.entrySet()) {
                if (!e.getValue().isEmpty() && runningIn(e.getKey()) < limits.perNamespace()
                        && (namespace == null || served(namespaceServed, e.getKey()) < served(namespaceServed, namespace))) {
                    namespace = e.getKey(); // the TreeMap's order breaks ties by name
                }
            }
            if (namespace == null) {
                break;
            }
            List<Profile> candidates = queued.get(namespace);
            Profile next = candidates.stream().min(Comparator.comparingLong((Profile p) -> served(profileServed, p.uid()))
                    .thenComparing(BY_AGE)).orElseThrow();
            candidates.remove(next);
            running.put(next.uid(), new Grant(next, now));
            long turn = grants++;
            namespaceServed.put(namespace, turn);
            profileServed.put(next.uid(), turn);
            start.add(next);
        }
        forgetGone(wanting);
        return new Plan(List.copyOf(start), overQuota);
    }

    /** The trial of this profile ended (whichever way): its slot is free. */
    void finished(String uid) {
        running.remove(uid);
    }

    /**
     * The profiles whose grant has held its slot past {@link Limits#hold} at {@code now}: their trial never reported
     * and its own deadlines did not end it. The profiler ends them and calls {@link #finished}.
     */
    List<Profile> expired(Instant now) {
        Instant from = now.minus(limits.hold());
        return running.values().stream().filter(g -> g.since().isBefore(from)).map(Grant::profile).sorted(BY_AGE).toList();
    }

    /** Every running trial is forgotten: this replica no longer leads. */
    void clear() {
        running.clear();
    }

    /** Trials running now. */
    int running() {
        return running.size();
    }

    private int runningIn(String namespace) {
        return (int) running.values().stream().filter(g -> g.profile().namespace().equals(namespace)).count();
    }

    /** The grant last given to the key: {@link #NEVER} when none was, so a newcomer goes first. */
    private static long served(Map<String, Long> served, String key) {
        return served.getOrDefault(key, NEVER);
    }

    /** What is kept of profiles and namespaces no longer wanting or running (bounded by those that are). */
    private void forgetGone(Collection<Profile> wanting) {
        java.util.Set<String> uids = new java.util.HashSet<>(running.keySet());
        java.util.Set<String> namespaces = new java.util.HashSet<>();
        running.values().forEach(g -> namespaces.add(g.profile().namespace()));
        for (Profile p : wanting) {
            uids.add(p.uid());
            namespaces.add(p.namespace());
        }
        profileServed.keySet().retainAll(uids);
        namespaceServed.keySet().retainAll(namespaces);
    }
}
