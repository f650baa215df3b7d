package io.dilu.autoscaler.profile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.autoscaler.profile.TrialSlots.Limits;
import io.dilu.autoscaler.profile.TrialSlots.Plan;
import io.dilu.autoscaler.profile.TrialSlots.Profile;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TrialSlotsTest {

    static final Instant T0 = Instant.parse("2026-11-26T00:00:00Z");
    static final Duration HOLD = Duration.ofSeconds(390);
    /** The documented defaults: 2 at once, 1 per namespace, 10 queued per namespace; 3 attempts of 2 min and 30 s. */
    static final Limits DEFAULTS = new Limits(2, 1, 10, HOLD);

    static Profile profile(String namespace, String name, int createdSecond) {
        return new Profile(namespace, name, namespace + "/" + name, T0.plusSeconds(createdSecond));
    }

    static List<Profile> many(String namespace, int count) {
        List<Profile> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            all.add(profile(namespace, "p" + i, i));
        }
        return all;
    }

    static List<String> names(List<Profile> profiles) {
        return profiles.stream().map(Profile::uid).toList();
    }

    @Test
    void aNamespaceWithManyProfilesTakesOneSlotAndAnotherNamespaceTheOther() {
        TrialSlots slots = new TrialSlots(DEFAULTS);
        List<Profile> wanting = new ArrayList<>(many("greedy", 8));
        wanting.add(profile("patient", "mine", 100));
        assertThat(names(slots.plan(wanting, T0).start())).containsExactly("greedy/p0", "patient/mine");
        assertThat(slots.plan(wanting, T0.plusSeconds(2)).start()).as("both slots are taken").isEmpty();
    }

    @Test
    void freeSlotsGoRoundTheNamespacesAndRoundEachNamespacesProfiles() {
        TrialSlots slots = new TrialSlots(new Limits(1, 1, 10, HOLD));
        List<Profile> wanting = new ArrayList<>(many("a", 2));
        wanting.addAll(many("b", 2));
        wanting.addAll(many("c", 2));
        List<String> order = new ArrayList<>();
        Instant now = T0;
        for (int turn = 0; turn < 9; turn++) {
            List<Profile> start = slots.plan(wanting, now).start();
            assertThat(start).hasSize(1);
            order.add(start.getFirst().uid());
            slots.finished(start.getFirst().uid());
            now = now.plusSeconds(1);
        }
        assertThat(order).containsExactly("a/p0", "b/p0", "c/p0", "a/p1", "b/p1", "c/p1", "a/p0", "b/p0", "c/p0");
    }

    @Test
    void aNamespaceWithOneProfileGetsEveryOtherTurnAgainstOneWithTen() {
        TrialSlots slots = new TrialSlots(new Limits(1, 1, 10, HOLD));
        List<Profile> wanting = new ArrayList<>(many("greedy", 10));
        wanting.add(profile("patient", "mine", 100));
        List<String> namespaces = new ArrayList<>();
        for (int turn = 0; turn < 6; turn++) {
            Profile p = slots.plan(wanting, T0.plusSeconds(turn)).start().getFirst();
            namespaces.add(p.namespace());
            slots.finished(p.uid());
        }
        assertThat(namespaces).containsExactly("greedy", "patient", "greedy", "patient", "greedy", "patient");
    }

    @Test
    void aNamespaceMayRunMoreTrialsAtOnceWhenAllowed() {
        TrialSlots slots = new TrialSlots(new Limits(4, 2, 10, HOLD));
        List<Profile> wanting = new ArrayList<>(many("a", 5));
        wanting.addAll(many("b", 1));
        assertThat(names(slots.plan(wanting, T0).start())).containsExactly("a/p0", "b/p0", "a/p1");
    }

    @Test
    void profilesBeyondTheQuotaWaitWithTheReasonAndTheOldestAreQueued() {
        TrialSlots slots = new TrialSlots(DEFAULTS);
        List<Profile> wanting = many("greedy", 12);
        Plan plan = slots.plan(wanting, T0);
        assertThat(names(plan.start())).containsExactly("greedy/p0");
        assertThat(names(new ArrayList<>(plan.overQuota().keySet()))).containsExactly("greedy/p10", "greedy/p11");
        assertThat(plan.overQuota().values()).allSatisfy(why -> assertThat(why).isEqualTo("namespace greedy has 10 profiles "
                + "queued or profiling, the most it may (dilu.autoscaler.profiler.max-queued-per-namespace); this one is "
                + "queued when one of them is done"));
        // One of the ten is done (Ready): the eleventh is queued.
        slots.finished("greedy/p0");
        assertThat(names(new ArrayList<>(slots.plan(wanting.subList(1, 12), T0.plusSeconds(1)).overQuota().keySet())))
                .containsExactly("greedy/p11");
    }

    @Test
    void aGrantThatHeldItsSlotPastTheHoldHasExpired() {
        TrialSlots slots = new TrialSlots(DEFAULTS);
        List<Profile> wanting = List.of(profile("a", "x", 0), profile("b", "y", 0));
        slots.plan(wanting.subList(0, 1), T0);
        slots.plan(wanting, T0.plusSeconds(60));
        assertThat(slots.expired(T0.plus(HOLD))).isEmpty();
        assertThat(names(slots.expired(T0.plus(HOLD).plusSeconds(1)))).containsExactly("a/x");
        slots.finished("a/x");
        assertThat(slots.running()).isEqualTo(1);
        assertThat(names(slots.expired(T0.plus(HOLD).plusSeconds(61)))).containsExactly("b/y");
    }

    /**
     * K namespaces want trials all the time and every grant holds its slot the longest it may: none waits longer than
     * ⌈K / parallel⌉ holds for its next slot.
     */
    @Test
    void noNamespaceWaitsLongerThanTheFairnessBound() {
        for (int k : new int[] {2, 3, 5, 8}) {
            for (int parallel : new int[] {1, 2, 3}) {
                TrialSlots slots = new TrialSlots(new Limits(parallel, 1, 10, HOLD));
                List<Profile> wanting = new ArrayList<>();
                for (int n = 0; n < k; n++) {
                    wanting.addAll(many("ns" + n, n + 1)); // namespace n has n + 1 profiles
                }
                Map<String, Instant> waitingSince = new HashMap<>();
                wanting.forEach(p -> waitingSince.putIfAbsent(p.namespace(), T0));
                Map<String, Instant> ends = new HashMap<>();
                Duration longest = Duration.ZERO;
                Instant now = T0;
                for (int step = 0; step < 200; step++) {
                    for (Profile p : slots.plan(wanting, now).start()) {
                        Duration waited = Duration.between(waitingSince.get(p.namespace()), now);
                        longest = waited.compareTo(longest) > 0 ? waited : longest;
                        ends.put(p.uid(), now.plus(HOLD));
                    }
                    // The next grant to end frees its slot; its namespace wants again from then.
                    Map.Entry<String, Instant> next = ends.entrySet().stream().min(Map.Entry.comparingByValue()).orElseThrow();
                    ends.remove(next.getKey());
                    slots.finished(next.getKey());
                    now = next.getValue();
                    waitingSince.put(next.getKey().substring(0, next.getKey().indexOf('/')), now);
                }
                long bound = (k + parallel - 1) / parallel;
                assertThat(longest).as("K=%d parallel=%d", k, parallel).isLessThanOrEqualTo(HOLD.multipliedBy(bound));
            }
        }
    }

    @Test
    void limitsNameTheSettingAndItsRange() {
        assertThatThrownBy(() -> new Limits(0, 1, 10, HOLD)).hasMessage("dilu.autoscaler.profiler.parallel must be at least 1, got 0");
        assertThatThrownBy(() -> new Limits(2, 0, 10, HOLD))
                .hasMessage("dilu.autoscaler.profiler.max-trials-per-namespace must be at least 1, got 0");
        assertThatThrownBy(() -> new Limits(2, 2, 1, HOLD))
                .hasMessage("dilu.autoscaler.profiler.max-queued-per-namespace must be at least max-trials-per-namespace (2), got 1");
    }
}
