package io.dilu.autoscaler.activator;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * What Knative's activators report per revision: the latest stat of each activator pod and when it arrived, summed
 * into a {@link Reading}. Thread-safe (the websocket's I/O threads record, the autoscaling tick reads); time is passed
 * in.
 *
 * <p>Memory is bounded against a sender that invents revisions and pod names: only revisions the owner's predicate
 * knows are kept (a PodAutoscaler exists for them), at most {@link Bounds#maxActivators} pods per revision (a new
 * pod pushes out the one heard from longest ago), and a report is dropped {@link Bounds#maxAge} after it arrived —
 * when the revision is read, and on a sweep that recording runs at most once per {@link Bounds#freshness}, which
 * also drops revisions the predicate no longer knows.
 */
public final class ActivatorStats {

    private static final Logger LOG = Logger.getLogger(ActivatorStats.class);

    /**
     * How much is kept, for how long, and how much is believed.
     *
     * @param maxActivators the most activator pods kept per revision
     * @param freshness how old a report may be and still count in a reading: the activator reports every second, so
     *        a few seconds tolerate a late report and forget an activator that went away
     * @param maxAge how long a report is kept at all: when the newest one arrived stays known this long
     * @param maxConcurrency the most concurrency a reading says, summed over the activators: a larger sum is clipped
     * @param maxRps the most requests per second a reading says, likewise
     */
    public record Bounds(int maxActivators, Duration freshness, Duration maxAge, double maxConcurrency, double maxRps) {
        /** The documented ceilings of {@code max-revision-concurrency} and {@code max-revision-rps}. */
        public Bounds(int maxActivators, Duration freshness, Duration maxAge) {
            this(maxActivators, freshness, maxAge, 10_000, 100_000);
        }

        public Bounds {
            if (maxActivators < 1) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.activator.max-activators-per-revision must be at least 1, got " + maxActivators);
            }
            if (freshness.isNegative() || freshness.isZero()) {
                throw new IllegalArgumentException("dilu.autoscaler.activator.freshness must be positive, got " + freshness);
            }
            if (maxAge.compareTo(freshness) < 0) {
                throw new IllegalArgumentException("dilu.autoscaler.activator.max-age must be at least the freshness ("
                        + freshness + "), got " + maxAge);
            }
            if (!(maxConcurrency > 0) || Double.isInfinite(maxConcurrency)) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.activator.max-revision-concurrency must be finite and above 0, got " + maxConcurrency);
            }
            if (!(maxRps > 0) || Double.isInfinite(maxRps)) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.activator.max-revision-rps must be finite and above 0, got " + maxRps);
            }
        }
    }

    /**
     * A revision's activator load: the sums over the activator pods whose latest report is fresh, each clipped to its
     * ceiling ({@link Bounds#maxConcurrency}, {@link Bounds#maxRps}).
     *
     * @param concurrency requests the activators hold or proxy for the revision
     * @param requestsPerSecond requests they received in their last one-second period
     * @param activators the activator pods summed (0: none reported lately, and the sums are 0)
     * @param newest when the newest report kept for the revision arrived, fresh or not
     */
    public record Reading(double concurrency, double requestsPerSecond, int activators, Instant newest) {
    }

    /**
     * What became of a frame's stats.
     *
     * @param stored those kept
     * @param unknown those dropped: their revision is not one the predicate knows
     */
    public record Recorded(int stored, int unknown) {
    }

    private record Report(double concurrency, double requestCount, Instant receivedAt) {
    }

    private final Bounds bounds;
    private final Predicate<RevisionKey> known;
    private final Consumer<RevisionKey> onActivity;
    /** Per revision, per activator pod, in the order reports arrived: the first entry is the one heard from longest ago. */
    private final Map<RevisionKey, LinkedHashMap<String, Report>> reports = new HashMap<>();
    private Instant lastSweep = Instant.MIN;

    /**
     * @param known which revisions are kept; others are dropped
     * @param onActivity told of each known revision for which a frame shows concurrency or requests, once per frame.
     *        It runs on the thread that records (the websocket's I/O thread): it must return at once, handing any
     *        work elsewhere. What it throws is logged.
     */
    public ActivatorStats(Bounds bounds, Predicate<RevisionKey> known, Consumer<RevisionKey> onActivity) {
        this.bounds = Objects.requireNonNull(bounds, "bounds");
        this.known = Objects.requireNonNull(known, "known");
        this.onActivity = Objects.requireNonNull(onActivity, "onActivity");
    }

    /** Keeps each stat of a known revision as its pod's latest, received at {@code receivedAt}; then tells of activity. */
    public Recorded record(List<ActivatorStat> stats, Instant receivedAt) {
        Set<RevisionKey> active = new LinkedHashSet<>();
        int stored = 0;
        synchronized (this) {
            sweepIfDue(receivedAt);
            for (ActivatorStat s : stats) {
                if (!knows(s.revision())) {
                    continue;
                }
                LinkedHashMap<String, Report> pods = reports.computeIfAbsent(s.revision(), k -> new LinkedHashMap<>());
                pods.remove(s.pod()); // re-inserted last: the order stays that of arrival
                pods.put(s.pod(), new Report(s.concurrency(), s.requestCount(), receivedAt));
                if (pods.size() > bounds.maxActivators()) {
                    Iterator<String> longestAgo = pods.keySet().iterator();
                    longestAgo.next();
                    longestAgo.remove();
                }
                stored++;
                if (s.active()) {
                    active.add(s.revision());
                }
            }
        }
        // Outside the lock: the listener may read.
        for (RevisionKey revision : active) {
            try {
                onActivity.accept(revision);
            } catch (RuntimeException e) {
                LOG.errorf(e, "the activity listener failed for revision %s", revision);
            }
        }
        return new Recorded(stored, stats.size() - stored);
    }

    /**
     * The revision's activator load at {@code now}: reports that arrived within the freshness before {@code now} (or
     * after it: a clock that stepped back hides no report) are summed. Empty when none was kept within the max age.
     */
    public synchronized Optional<Reading> reading(RevisionKey revision, Instant now) {
        LinkedHashMap<String, Report> pods = reports.get(revision);
        if (pods == null) {
            return Optional.empty();
        }
        dropOld(pods, now);
        if (pods.isEmpty()) {
            reports.remove(revision);
            return Optional.empty();
        }
        Instant freshFrom = now.minus(bounds.freshness());
        double concurrency = 0;
        double rps = 0;
        int activators = 0;
        Instant newest = Instant.MIN;
        for (Report r : pods.values()) {
            if (r.receivedAt().isAfter(newest)) {
                newest = r.receivedAt();
            }
            if (!r.receivedAt().isBefore(freshFrom)) {
                concurrency += r.concurrency();
                rps += r.requestCount();
                activators++;
            }
        }
        return Optional.of(new Reading(Math.min(concurrency, bounds.maxConcurrency()), Math.min(rps, bounds.maxRps()),
                activators, newest));
    }

    /** The revisions with reports kept. */
    public synchronized int revisions() {
        return reports.size();
    }

    private boolean knows(RevisionKey revision) {
        try {
            return known.test(revision);
        } catch (RuntimeException e) {
            LOG.errorf(e, "the known-revision predicate failed for %s; its stat is dropped", revision);
            return false;
        }
    }

    private void sweepIfDue(Instant now) {
        // A clock that stepped back sweeps at once rather than after it caught up.
        if (!now.isBefore(lastSweep) && now.isBefore(lastSweep.plus(bounds.freshness()))) {
            return;
        }
        lastSweep = now;
        reports.entrySet().removeIf(e -> {
            dropOld(e.getValue(), now);
            return e.getValue().isEmpty() || !knows(e.getKey());
        });
    }

    private void dropOld(LinkedHashMap<String, Report> pods, Instant now) {
        Instant keptFrom = now.minus(bounds.maxAge());
        pods.values().removeIf(r -> r.receivedAt().isBefore(keptFrom));
    }
}
