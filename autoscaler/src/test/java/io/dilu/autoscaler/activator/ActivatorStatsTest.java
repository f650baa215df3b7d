package io.dilu.autoscaler.activator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.autoscaler.activator.ActivatorStats.Bounds;
import io.dilu.autoscaler.activator.ActivatorStats.Reading;
import io.dilu.autoscaler.activator.ActivatorStats.Recorded;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ActivatorStatsTest {

    static final Instant T0 = Instant.parse("2026-08-01T12:00:00Z");
    static final Bounds BOUNDS = new Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60));
    static final RevisionKey HELLO = new RevisionKey("tenant-a", "hello-00001");
    static final RevisionKey WORLD = new RevisionKey("tenant-a", "world-00001");
    static final RevisionKey STRANGER = new RevisionKey("tenant-b", "invented-1");

    final Set<RevisionKey> known = new HashSet<>(Set.of(HELLO, WORLD));
    final List<RevisionKey> pokes = new ArrayList<>();
    final ActivatorStats stats = new ActivatorStats(BOUNDS, known::contains, pokes::add);

    static ActivatorStat stat(RevisionKey revision, String pod, double concurrency, double requests) {
        return new ActivatorStat(revision, pod, concurrency, requests);
    }

    static Instant at(double seconds) {
        return T0.plusMillis((long) (seconds * 1000));
    }

    @Test
    void sumsTheLatestStatOfEveryActivator() {
        stats.record(List.of(stat(HELLO, "activator-1", 1, 1)), at(0));
        stats.record(List.of(stat(HELLO, "activator-1", 4, 10), stat(HELLO, "activator-2", 2.5, 7)), at(1));
        assertThat(stats.reading(HELLO, at(1.5))).contains(new Reading(6.5, 17, 2, at(1)));
        assertThat(stats.reading(WORLD, at(1.5))).isEmpty();
    }

    @Test
    void aReadingIsClippedToTheRevisionsCeilings() {
        ActivatorStats clipped = new ActivatorStats(new Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60), 10_000, 100_000),
                known::contains, pokes::add);
        clipped.record(List.of(stat(HELLO, "activator-1", 999_999, 999_999), stat(HELLO, "activator-2", 999_999, 1)), at(0));
        assertThat(clipped.reading(HELLO, at(0.5))).contains(new Reading(10_000, 100_000, 2, at(0)));
        assertThat(new Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60)))
                .as("the documented ceilings").isEqualTo(new Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60), 10_000, 100_000));
    }

    @Test
    void anActivatorSilentPastTheFreshnessNoLongerCounts() {
        stats.record(List.of(stat(HELLO, "activator-1", 4, 10)), at(0));
        stats.record(List.of(stat(HELLO, "activator-2", 1, 2)), at(2));
        assertThat(stats.reading(HELLO, at(3))).contains(new Reading(5, 12, 2, at(2)));
        assertThat(stats.reading(HELLO, at(3.001))).contains(new Reading(1, 2, 1, at(2)));
        // Silence is no load: the activator stops reporting a revision without requests.
        assertThat(stats.reading(HELLO, at(10))).contains(new Reading(0, 0, 0, at(2)));
    }

    @Test
    void aReportIsForgottenAfterTheMaxAge() {
        stats.record(List.of(stat(HELLO, "activator-1", 4, 10)), at(0));
        assertThat(stats.reading(HELLO, at(60))).map(Reading::newest).contains(at(0));
        assertThat(stats.reading(HELLO, at(60.001))).isEmpty();
        assertThat(stats.revisions()).isZero();
    }

    @Test
    void aClockThatSteppedBackHidesNoReport() {
        stats.record(List.of(stat(HELLO, "activator-1", 4, 10)), at(5));
        assertThat(stats.reading(HELLO, at(0))).contains(new Reading(4, 10, 1, at(5)));
    }

    @Test
    void keepsAtMostTheBoundOfActivatorsPushingOutTheOneHeardFromLongestAgo() {
        stats.record(List.of(stat(HELLO, "activator-1", 1, 1), stat(HELLO, "activator-2", 2, 2)), at(0));
        stats.record(List.of(stat(HELLO, "activator-3", 4, 4)), at(0.5));
        stats.record(List.of(stat(HELLO, "activator-1", 8, 8)), at(1)); // heard again: now the latest
        stats.record(List.of(stat(HELLO, "activator-4", 16, 16)), at(1.5)); // pushes out activator-2
        assertThat(stats.reading(HELLO, at(2))).contains(new Reading(28, 28, 3, at(1.5)));
        List<ActivatorStat> invented = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            invented.add(stat(HELLO, "invented-" + i, 0, 0));
        }
        stats.record(invented, at(2));
        assertThat(stats.reading(HELLO, at(2))).contains(new Reading(0, 0, 3, at(2)));
    }

    @Test
    void keepsOnlyRevisionsThePredicateKnows() {
        Recorded r = stats.record(List.of(stat(HELLO, "activator-1", 1, 1), stat(STRANGER, "activator-1", 5, 5)), at(0));
        assertThat(r).isEqualTo(new Recorded(1, 1));
        assertThat(stats.reading(STRANGER, at(0))).isEmpty();
        assertThat(stats.revisions()).isEqualTo(1);
        assertThat(pokes).containsExactly(HELLO);
    }

    @Test
    void aSweepDropsRevisionsNoLongerKnownAndReportsPastTheMaxAge() {
        stats.record(List.of(stat(HELLO, "activator-1", 1, 1), stat(WORLD, "activator-1", 1, 1)), at(0));
        known.remove(WORLD); // its PodAutoscaler was deleted
        stats.record(List.of(), at(1)); // within a freshness of the last sweep: none yet
        assertThat(stats.revisions()).isEqualTo(2);
        stats.record(List.of(), at(3));
        assertThat(stats.revisions()).isEqualTo(1);
        stats.record(List.of(), at(63));
        assertThat(stats.revisions()).isZero();
    }

    @Test
    void tellsOfActivityOncePerFramePerRevision() {
        stats.record(List.of(stat(HELLO, "activator-1", 1, 1), stat(HELLO, "activator-2", 0, 3),
                stat(WORLD, "activator-1", 0, 0), stat(STRANGER, "activator-1", 9, 9)), at(0));
        assertThat(pokes).containsExactly(HELLO); // WORLD is idle, STRANGER unknown
        stats.record(List.of(stat(WORLD, "activator-1", 0.5, 0)), at(1));
        assertThat(pokes).containsExactly(HELLO, WORLD);
    }

    @Test
    void theListenerMayReadAndWhatItThrowsDoesNotReachTheSender() {
        List<Optional<Reading>> seen = new ArrayList<>();
        AtomicReference<ActivatorStats> self = new AtomicReference<>();
        ActivatorStats reading = new ActivatorStats(BOUNDS, known::contains, k -> seen.add(self.get().reading(k, at(0))));
        self.set(reading);
        reading.record(List.of(stat(HELLO, "activator-1", 1, 1)), at(0));
        assertThat(seen).containsExactly(Optional.of(new Reading(1, 1, 1, at(0))));

        ActivatorStats throwing = new ActivatorStats(BOUNDS, known::contains, k -> {
            throw new IllegalStateException("listener bug");
        });
        assertThat(throwing.record(List.of(stat(HELLO, "activator-1", 1, 1)), at(0))).isEqualTo(new Recorded(1, 0));
        assertThat(throwing.reading(HELLO, at(0))).isPresent();
    }

    @Test
    void aFailingPredicateKeepsNothing() {
        ActivatorStats failing = new ActivatorStats(BOUNDS, k -> {
            throw new IllegalStateException("informer not synced");
        }, pokes::add);
        assertThat(failing.record(List.of(stat(HELLO, "activator-1", 1, 1)), at(0))).isEqualTo(new Recorded(0, 1));
        assertThat(failing.revisions()).isZero();
        assertThat(pokes).isEmpty();
    }

    @Test
    void boundsNameTheSettingAndItsRange() {
        assertThatThrownBy(() -> new Bounds(0, Duration.ofSeconds(3), Duration.ofSeconds(60))).hasMessage(
                "dilu.autoscaler.activator.max-activators-per-revision must be at least 1, got 0");
        assertThatThrownBy(() -> new Bounds(1, Duration.ZERO, Duration.ofSeconds(60))).hasMessage(
                "dilu.autoscaler.activator.freshness must be positive, got PT0S");
        assertThatThrownBy(() -> new Bounds(1, Duration.ofSeconds(3), Duration.ofSeconds(2))).hasMessage(
                "dilu.autoscaler.activator.max-age must be at least the freshness (PT3S), got PT2S");
    }
}
