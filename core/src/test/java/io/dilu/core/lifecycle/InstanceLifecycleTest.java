package io.dilu.core.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Phase;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class InstanceLifecycleTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");

    /** A Ready pod with the serving gate and its condition True, created {@code age} seconds before T0. */
    static Instance serving(String name, int age) {
        return new Instance(name, "uid-" + name, T0.minusSeconds(age), true, "10.0.0." + age, Optional.empty(), false,
                false, true, Path.IN, false);
    }

    /** A pod parked {@code ago} seconds before T0, out of the request path. */
    static Instance parked(String name, int ago) {
        return new Instance(name, "uid-" + name, T0.minusSeconds(3600), false, "10.0.1." + ago,
                Optional.of(T0.minusSeconds(ago)), false, false, true, Path.OUT, false);
    }

    static List<String> names(List<Instance> pods) {
        return pods.stream().map(Instance::name).toList();
    }

    @Test
    void aScaleInParksTheNewestServingPodsOutOfThePath() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("old", 300), serving("new", 10), serving("mid", 100)));
        InstanceLifecycle.Plan plan = pods.plan(1, 2, false);
        assertThat(names(plan.park())).containsExactly("new", "mid");
        assertThat(plan.serving()).containsOnlyKeys(plan.park().toArray(Instance[]::new)).containsValues(Path.OUT);
        assertThat(plan.wake()).isEmpty();
        assertThat(pods.plan(1, 1, false).park()).as("only as many as are to be parked; the rest is the Deployment's")
                .extracting(Instance::name).containsExactly("new");
    }

    @Test
    void aScaleInParksNoPodWhoseGoingWouldLeaveFewerServingThanDecidedWhileOthersStillStart() {
        Instance starting = new Instance("starting", "uid-starting", T0, false, null, Optional.empty(), false, false, true,
                Path.OUT, false);
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("ready", 100), starting));
        assertThat(pods.plan(1, 1, false).park()).as("the one ready pod serves until the starting one is ready").isEmpty();
        Instance started = new Instance("starting", "uid-starting", T0, true, "10.0.0.2", Optional.empty(), false, false,
                true, Path.IN, false);
        assertThat(names(new InstanceLifecycle(List.of(serving("ready", 100), started)).plan(1, 1, false).park()))
                .as("once both serve, the newest parks").containsExactly("starting");
    }

    @Test
    void aScaleOutWakesTheMostRecentlyParkedFirstAndOnlyWhatItNeeds() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("a", 100), parked("p-early", 600), parked("p-late", 60)));
        InstanceLifecycle.Plan plan = pods.plan(2, 1, false);
        assertThat(names(plan.wake())).containsExactly("p-late");
        assertThat(plan.park()).isEmpty();
        assertThat(plan.serving()).as("p-early stays out of the path").isEmpty();
        assertThat(names(pods.plan(4, 0, false).wake())).containsExactly("p-late", "p-early");
    }

    @Test
    void theLastInstanceParkedStaysInTheRequestPathAndIsScraped() {
        InstanceLifecycle last = new InstanceLifecycle(List.of(serving("only", 100), parked("older", 600)));
        InstanceLifecycle.Plan plan = last.plan(0, 2, false);
        assertThat(names(plan.park())).containsExactly("only");
        assertThat(plan.serving()).as("its condition stays True: nothing to write; the older one is out already").isEmpty();

        Instance inPath = new Instance("only", "uid-only", T0, true, "10.0.0.9", Optional.of(T0), false, false, true, Path.IN,
                false);
        InstanceLifecycle after = new InstanceLifecycle(List.of(inPath, parked("older", 600)));
        assertThat(after.scraped()).as("the in-path one is scraped, the other parked one not").containsExactly("10.0.0.9");
        assertThat(after.servingCount()).isZero();
        assertThat(after.parkedCount()).isEqualTo(2);
        assertThat(names(after.plan(1, 1, false).wake())).as("the first wake is the one in the path").containsExactly("only");
        assertThat(after.plan(1, 1, false).serving()).isEmpty();
    }

    @Test
    void whereTheDecisionKeepsTheLastInstanceItsConditionSaysKeptAndSaysSoAgainWhenTheDecisionChanges() {
        InstanceLifecycle last = new InstanceLifecycle(List.of(serving("only", 100), parked("older", 600)));
        InstanceLifecycle.Plan plan = last.plan(0, 2, true);
        assertThat(names(plan.park())).containsExactly("only");
        assertThat(plan.serving()).as("the scheduler extender keeps its GPU").isEqualTo(Map.of(last.instances().get(0), Path.KEPT));

        Instance kept = new Instance("only", "uid-only", T0, true, "10.0.0.9", Optional.of(T0), false, false, true, Path.KEPT,
                false);
        InstanceLifecycle after = new InstanceLifecycle(List.of(kept, parked("older", 600)));
        assertThat(after.plan(0, 2, true).serving()).as("written already").isEmpty();
        assertThat(after.plan(0, 2, false).serving()).as("the revision may reach zero now: in the path, not kept")
                .isEqualTo(Map.of(kept, Path.IN));
        assertThat(after.scraped()).as("scraped as any in the path").containsExactly("10.0.0.9");
    }

    @Test
    void theKeptMarkIsWrittenBeforeAnyParkAndTheOtherConditionsAfterThem() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("a", 100), serving("b", 10), parked("older", 600)));
        Instance a = pods.instances().get(0), b = pods.instances().get(1);
        assertThat(pods.plan(0, 3, true).intents()).containsExactly(new Intent.Serving(b, Path.KEPT), new Intent.Park(b),
                new Intent.Park(a), new Intent.Serving(a, Path.OUT));
        assertThat(pods.plan(0, 3, false).intents()).as("not kept: its condition stays True, nothing to write first")
                .containsExactly(new Intent.Park(b), new Intent.Park(a), new Intent.Serving(a, Path.OUT));
    }

    /** A pod whose wake was refused, created {@code age} seconds before T0. */
    static Instance refused(String name, int age) {
        return new Instance(name, "uid-" + name, T0.minusSeconds(age), false, "10.0.2." + age, Optional.empty(), false, true,
                true, Path.OUT, false);
    }

    @Test
    void wakesAreWrittenFirstAndTheReplacementsOfRefusedWakesLast() {
        Instance r = refused("refused", 50);
        InstanceLifecycle pods = new InstanceLifecycle(List.of(r, serving("a", 100), parked("p", 60)));
        assertThat(pods.plan(3, 0, false).intents()).containsExactly(new Intent.Wake(pods.instances().get(2)),
                new Intent.Delete(r));
    }

    @Test
    void aRefusedWakeIsTriedAfterEveryParkedOneAndReplacedOnlyWhenTheScaleOutStillWantsMore() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("a", 100), refused("r", 40), parked("p-early", 600),
                parked("p-late", 60)));
        InstanceLifecycle.Plan two = pods.plan(3, 0, false);
        assertThat(names(two.wake())).as("the parked are tried before the one refused").containsExactly("p-late", "p-early");
        assertThat(two.delete()).as("nor is it replaced while the parked ones serve the scale-out").isEmpty();
        assertThat(two.park()).as("nor parked again while the scale-out is under way").isEmpty();
        InstanceLifecycle.Plan three = pods.plan(4, 0, false);
        assertThat(names(three.delete())).as("none left to try: replaced").containsExactly("r");
    }

    @Test
    void aRefusedWakeIsParkedAgainOnceTheScaleOutWantsNoMoreToBeTriedByTheNextWake() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(serving("a", 100), refused("r", 40)));
        InstanceLifecycle.Plan plan = pods.plan(1, 1, false);
        assertThat(names(plan.park())).containsExactly("r");
        assertThat(plan.delete()).isEmpty();
        assertThat(pods.parkedCount()).as("it holds its memory as a parked one does").isEqualTo(1);
        assertThat(plan.serving()).as("out of the path already").isEmpty();
    }

    @Test
    void theOneWakeRuleTriesTheMostRecentlyParkedFirstAndReplacesTheLeastRecentlyParkedWhenNoneFits() {
        List<String> parked = List.of("oldest", "mid", "newest");
        List<String> tried = new java.util.ArrayList<>();
        assertThat(InstanceLifecycle.wake(parked, p -> tried.add(p) && p.equals("mid")))
                .contains(new InstanceLifecycle.Wake<>("mid", true));
        assertThat(tried).containsExactly("newest", "mid");
        assertThat(InstanceLifecycle.wake(parked, p -> false)).contains(new InstanceLifecycle.Wake<>("oldest", false));
        assertThat(InstanceLifecycle.wake(List.<String>of(), p -> true)).isEmpty();
    }

    @Test
    void everyPhaseAnInstanceCanBeInIsReadFromItsFactsAndTheTransitionsSayWhereItMayGo() {
        assertThat(List.of(serving("s", 1), parked("p", 1), refused("r", 1)).stream().map(Instance::phase))
                .containsExactly(Phase.SERVING, Phase.PARKED_OUT, Phase.REFUSED);
        assertThat(InstanceLifecycle.allows(Phase.SERVING, Phase.PARKED_IN)).as("a park leaves the condition True").isTrue();
        assertThat(InstanceLifecycle.allows(Phase.SERVING, Phase.PARKED_OUT)).as("the path is written after the park")
                .isFalse();
        assertThat(InstanceLifecycle.allows(Phase.STARTING, Phase.WAKING)).isFalse();
        assertThat(InstanceLifecycle.allows(Phase.TERMINATING, Phase.SERVING)).isFalse();
        assertThat(InstanceLifecycle.allows(Phase.REFUSED, Phase.PARKED_OUT)).isTrue();
        for (Phase from : Phase.values()) {
            assertThat(InstanceLifecycle.allows(from, Phase.TERMINATING)).as("anything may be deleted: " + from).isTrue();
        }
    }

    @Test
    void whenTheInPathInstanceIsEvictedTheNextParkedOneTakesItsPlace() {
        InstanceLifecycle pods = new InstanceLifecycle(List.of(parked("p1", 600), parked("p2", 60)));
        assertThat(pods.plan(0, 2, false).serving()).isEqualTo(Map.of(pods.instances().get(1), Path.IN));
    }

    @Test
    void aPodWithoutTheGateIsNeverParked() {
        Instance ungated = new Instance("plain", "uid-plain", T0, true, "10.0.0.1", Optional.empty(), false, false, false,
                Path.OUT, false);
        InstanceLifecycle pods = new InstanceLifecycle(List.of(ungated, serving("gated", 10)));
        assertThat(names(pods.plan(0, 2, false).park())).as("parked, it would stay in the path with no SMs booked")
                .containsExactly("gated");
    }

    @Test
    void aWriteTheWatchDoesNotShowYetCountsAsDone() {
        InstanceLifecycle seen = new InstanceLifecycle(List.of(serving("a", 10), parked("b", 60)));
        InstanceLifecycle written = seen.with(Map.of("uid-a", new InstanceLifecycle.Written(true, T0),
                "uid-b", new InstanceLifecycle.Written(false, T0)));
        assertThat(written.parkedCount()).as("a parked a moment ago, b woken").isEqualTo(1);
        assertThat(written.instances().get(0).parkedAt()).contains(T0);
        assertThat(written.instances().get(1).wakeAsked()).isTrue();
        assertThat(written.plan(1, 1, false).wake()).as("b is not woken twice").isEmpty();
    }
}
