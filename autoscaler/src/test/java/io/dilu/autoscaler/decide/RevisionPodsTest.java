package io.dilu.autoscaler.decide;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.decide.RevisionPods.Intent;
import io.dilu.autoscaler.decide.RevisionPods.Path;
import io.dilu.autoscaler.decide.RevisionPods.PodState;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RevisionPodsTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");

    /** A Ready pod with the serving gate and its condition True, created {@code age} seconds before T0. */
    static PodState serving(String name, int age) {
        return new PodState(name, "uid-" + name, T0.minusSeconds(age), true, "10.0.0." + age, Optional.empty(), false,
                false, true, Path.IN, false);
    }

    /** A pod parked {@code ago} seconds before T0, out of the request path. */
    static PodState parked(String name, int ago) {
        return new PodState(name, "uid-" + name, T0.minusSeconds(3600), false, "10.0.1." + ago,
                Optional.of(T0.minusSeconds(ago)), false, false, true, Path.OUT, false);
    }

    static List<String> names(List<PodState> pods) {
        return pods.stream().map(PodState::name).toList();
    }

    @Test
    void aScaleInParksTheNewestServingPodsOutOfThePath() {
        RevisionPods pods = new RevisionPods(List.of(serving("old", 300), serving("new", 10), serving("mid", 100)));
        RevisionPods.Plan plan = pods.plan(1, 2, false);
        assertThat(names(plan.park())).containsExactly("new", "mid");
        assertThat(plan.serving()).containsOnlyKeys(plan.park().toArray(PodState[]::new)).containsValues(Path.OUT);
        assertThat(plan.wake()).isEmpty();
        assertThat(pods.plan(1, 1, false).park()).as("only as many as are to be parked; the rest is the Deployment's")
                .extracting(PodState::name).containsExactly("new");
    }

    @Test
    void aScaleOutWakesTheMostRecentlyParkedFirstAndOnlyWhatItNeeds() {
        RevisionPods pods = new RevisionPods(List.of(serving("a", 100), parked("p-early", 600), parked("p-late", 60)));
        RevisionPods.Plan plan = pods.plan(2, 1, false);
        assertThat(names(plan.wake())).containsExactly("p-late");
        assertThat(plan.park()).isEmpty();
        assertThat(plan.serving()).as("p-early stays out of the path").isEmpty();
        assertThat(names(pods.plan(4, 0, false).wake())).containsExactly("p-late", "p-early");
    }

    @Test
    void theLastInstanceParkedStaysInTheRequestPathAndIsScraped() {
        RevisionPods last = new RevisionPods(List.of(serving("only", 100), parked("older", 600)));
        RevisionPods.Plan plan = last.plan(0, 2, false);
        assertThat(names(plan.park())).containsExactly("only");
        assertThat(plan.serving()).as("its condition stays True: nothing to write; the older one is out already").isEmpty();

        PodState inPath = new PodState("only", "uid-only", T0, true, "10.0.0.9", Optional.of(T0), false, false, true, Path.IN,
                false);
        RevisionPods after = new RevisionPods(List.of(inPath, parked("older", 600)));
        assertThat(after.scraped()).as("the in-path one is scraped, the other parked one not").containsExactly("10.0.0.9");
        assertThat(after.servingCount()).isZero();
        assertThat(after.parkedCount()).isEqualTo(2);
        assertThat(names(after.plan(1, 1, false).wake())).as("the first wake is the one in the path").containsExactly("only");
        assertThat(after.plan(1, 1, false).serving()).isEmpty();
    }

    @Test
    void whereTheDecisionKeepsTheLastInstanceItsConditionSaysKeptAndSaysSoAgainWhenTheDecisionChanges() {
        RevisionPods last = new RevisionPods(List.of(serving("only", 100), parked("older", 600)));
        RevisionPods.Plan plan = last.plan(0, 2, true);
        assertThat(names(plan.park())).containsExactly("only");
        assertThat(plan.serving()).as("the scheduler extender keeps its GPU").isEqualTo(Map.of(last.pods().get(0), Path.KEPT));

        PodState kept = new PodState("only", "uid-only", T0, true, "10.0.0.9", Optional.of(T0), false, false, true, Path.KEPT,
                false);
        RevisionPods after = new RevisionPods(List.of(kept, parked("older", 600)));
        assertThat(after.plan(0, 2, true).serving()).as("written already").isEmpty();
        assertThat(after.plan(0, 2, false).serving()).as("the revision may reach zero now: in the path, not kept")
                .isEqualTo(Map.of(kept, Path.IN));
        assertThat(after.scraped()).as("scraped as any in the path").containsExactly("10.0.0.9");
    }

    @Test
    void theKeptMarkIsWrittenBeforeAnyParkAndTheOtherConditionsAfterThem() {
        RevisionPods pods = new RevisionPods(List.of(serving("a", 100), serving("b", 10), parked("older", 600)));
        PodState a = pods.pods().get(0), b = pods.pods().get(1);
        assertThat(pods.plan(0, 3, true).intents()).containsExactly(new Intent.Serving(b, Path.KEPT), new Intent.Park(b),
                new Intent.Park(a), new Intent.Serving(a, Path.OUT));
        assertThat(pods.plan(0, 3, false).intents()).as("not kept: its condition stays True, nothing to write first")
                .containsExactly(new Intent.Park(b), new Intent.Park(a), new Intent.Serving(a, Path.OUT));
    }

    @Test
    void wakesAreWrittenFirstAndTheDeletionsOfRefusedWakesLast() {
        PodState refused = new PodState("refused", "uid-refused", T0, false, "10.0.0.2", Optional.empty(), false, true, true,
                Path.OUT, false);
        RevisionPods pods = new RevisionPods(List.of(refused, serving("a", 100), parked("p", 60)));
        assertThat(pods.plan(2, 0, false).intents()).containsExactly(new Intent.Wake(pods.pods().get(2)),
                new Intent.Delete(refused));
    }

    @Test
    void whenTheInPathInstanceIsEvictedTheNextParkedOneTakesItsPlace() {
        RevisionPods pods = new RevisionPods(List.of(parked("p1", 600), parked("p2", 60)));
        assertThat(pods.plan(0, 2, false).serving()).isEqualTo(Map.of(pods.pods().get(1), Path.IN));
    }

    @Test
    void aPodWithoutTheGateIsNeverParkedAndAFailedWakeIsDeleted() {
        PodState ungated = new PodState("plain", "uid-plain", T0, true, "10.0.0.1", Optional.empty(), false, false, false,
                Path.OUT, false);
        PodState refused = new PodState("refused", "uid-refused", T0, false, "10.0.0.2", Optional.empty(), false, true, true,
                Path.OUT, false);
        RevisionPods pods = new RevisionPods(List.of(ungated, refused));
        RevisionPods.Plan plan = pods.plan(0, 1, false);
        assertThat(plan.park()).as("parked, it would stay in the path with no SMs booked").isEmpty();
        assertThat(names(plan.delete())).containsExactly("refused");
    }

    @Test
    void aWriteTheWatchDoesNotShowYetCountsAsDone() {
        RevisionPods seen = new RevisionPods(List.of(serving("a", 10), parked("b", 60)));
        RevisionPods written = seen.with(Map.of("uid-a", new RevisionPods.Written(true, T0),
                "uid-b", new RevisionPods.Written(false, T0)));
        assertThat(written.parkedCount()).as("a parked a moment ago, b woken").isEqualTo(1);
        assertThat(written.pods().get(0).parkedAt()).contains(T0);
        assertThat(written.pods().get(1).wakeAsked()).isTrue();
        assertThat(written.plan(1, 1, false).wake()).as("b is not woken twice").isEmpty();
    }
}
