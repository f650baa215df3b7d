package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.core.tokens.TokenParameters;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ReconcilerTest {

    static final Instant T0 = Instant.parse("2026-11-22T10:00:00Z");
    static final Duration GRACE = Duration.ofSeconds(30);
    static final double NODE = TokenParameters.DEFAULTS.etaViolation();

    static Set<String> ids(String gpu, int from, int count) {
        return IntStream.range(from, from + count).mapToObj(i -> String.format("%s::sm%02d", gpu, i)).collect(Collectors.toSet());
    }

    static Allocation allocation(String id, String gpu, Set<String> ids, int createdSecond) {
        return new Allocation(id, gpu, ids, T0.plusSeconds(createdSecond), Optional.empty(),
                Allocation.ShareQuota.defaults(ids.size()), Optional.empty());
    }

    static Allocation.ShareQuota quota(int limit, Priority priority, double threshold) {
        return new Allocation.ShareQuota(limit, priority, threshold, Quota.DEFAULT_MEMORY_MIB);
    }

    static PodView pod(String name, Map<String, String> annotations, int... sm) {
        List<PodView.GpuContainer> containers = IntStream.range(0, sm.length)
                .mapToObj(i -> new PodView.GpuContainer("c" + i, sm[i])).toList();
        return new PodView("ns", name, "uid-" + name, T0, false, annotations, containers, true);
    }

    static Map<ContainerRef.PodKey, PodView> byKey(PodView... pods) {
        return java.util.Arrays.stream(pods).collect(Collectors.toMap(PodView::key, p -> p));
    }

    @Test
    void theKubeletsListingNamesTheOwnerAndThePodGivesTheQuota() {
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 30), 0);
        PodView p = pod("infer", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a", DiluNames.SM_LIMIT, "60", DiluNames.PRIORITY, "slo"), 30);
        ContainerRef c0 = new ContainerRef("ns", "infer", "c0");
        List<Reconciler.Change> plan = Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(p), T0, GRACE, NODE);
        assertThat(plan).containsExactly(new Reconciler.Bind("a", c0, quota(60, Priority.SLO, Double.NaN), false));

        Allocation bound = a.withOwner(c0, quota(60, Priority.SLO, Double.NaN));
        assertThat(Reconciler.plan(List.of(bound), Map.of(c0, a.deviceIds()), byKey(p), T0, GRACE, NODE))
                .as("nothing to do once in line").isEmpty();
    }

    @Test
    void anLlmPodsThresholdReachesItsShare() {
        ContainerRef c0 = new ContainerRef("ns", "llm", "c0");
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 30), 0).withOwner(c0, quota(60, Priority.SLO, Double.NaN));
        PodView p = pod("llm", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a", DiluNames.SM_LIMIT, "60", DiluNames.PRIORITY, "slo",
                DiluNames.LLM, "true"), 30);
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(p), T0, GRACE, NODE))
                .containsExactly(new Reconciler.Bind("a", c0, quota(60, Priority.SLO, 1.3), false));
    }

    @Test
    void aNamespaceWithoutTheRightGetsTheDefaultsWhateverItsPodsAsk() {
        ContainerRef c0 = new ContainerRef("ns", "greedy", "c0");
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 10), 0);
        PodView granted = pod("greedy", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a", DiluNames.SM_LIMIT, "100",
                DiluNames.PRIORITY, "slo", DiluNames.KLC_THRESHOLD, "1.05"), 10);
        PodView notGranted = new PodView(granted.namespace(), granted.name(), granted.uid(), granted.created(), false,
                granted.annotations(), granted.gpuContainers(), false);
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(notGranted), T0, GRACE, NODE))
                .containsExactly(new Reconciler.Bind("a", c0, quota(20, Priority.BEST_EFFORT, Double.NaN), false));
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(granted), T0, GRACE, NODE))
                .containsExactly(new Reconciler.Bind("a", c0, quota(100, Priority.SLO, 1.05), false));
    }

    @Test
    void aThresholdNeedsTheRightBelowTheNodesOwn() {
        ContainerRef c0 = new ContainerRef("ns", "fn", "c0");
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 10), 0);
        PodView granted = pod("fn", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a", DiluNames.KLC_THRESHOLD, "1.8"), 10);
        PodView notGranted = new PodView(granted.namespace(), granted.name(), granted.uid(), granted.created(), false,
                granted.annotations(), granted.gpuContainers(), false);
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(notGranted), T0, GRACE, NODE))
                .as("above the default 1.6").containsExactly(
                        new Reconciler.Bind("a", c0, quota(20, Priority.BEST_EFFORT, 1.8), false));
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), byKey(notGranted), T0, GRACE, 2.0))
                .as("below a node configured at 2.0").containsExactly(
                        new Reconciler.Bind("a", c0, quota(20, Priority.BEST_EFFORT, Double.NaN), false));
    }

    @Test
    void aWrongGuessAtAllocateIsCorrectedAndCounted() {
        ContainerRef guessed = new ContainerRef("ns", "other", "c0");
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 30), 0).withOwner(guessed, quota(60, Priority.SLO, Double.NaN));
        ContainerRef real = new ContainerRef("ns", "train", "c0");
        PodView p = pod("train", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a"), 30);
        assertThat(Reconciler.plan(List.of(a), Map.of(real, a.deviceIds()), byKey(p), T0, GRACE, NODE))
                .containsExactly(new Reconciler.Bind("a", real, quota(60, Priority.BEST_EFFORT, Double.NaN), true));
    }

    @Test
    void anUnknownPodKeepsItsQuotaUntilTheApiServerIsBack() {
        ContainerRef c0 = new ContainerRef("ns", "infer", "c0");
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 30), 0).withOwner(c0, quota(45, Priority.SLO, Double.NaN));
        assertThat(Reconciler.plan(List.of(a), Map.of(c0, a.deviceIds()), Map.of(), T0, GRACE, NODE)).isEmpty();
    }

    @Test
    void aShareNoContainerHoldsIsReleasedOnlyAfterTheGracePeriod() {
        Allocation a = allocation("a", "GPU-a", ids("GPU-a", 0, 30), 0);
        assertThat(Reconciler.plan(List.of(a), Map.of(), Map.of(), T0, GRACE, NODE)).containsExactly(new Reconciler.Missing("a", T0));
        Allocation missing = a.withMissingSince(Optional.of(T0));
        assertThat(Reconciler.plan(List.of(missing), Map.of(), Map.of(), T0.plusSeconds(29), GRACE, NODE)).isEmpty();
        assertThat(Reconciler.plan(List.of(missing), Map.of(), Map.of(), T0.plusSeconds(30), GRACE, NODE))
                .containsExactly(new Reconciler.Release("a"));
        // Listed again before that (a kubelet that restarted and re-read its checkpoint): kept.
        ContainerRef c0 = new ContainerRef("ns", "p", "c0");
        assertThat(Reconciler.plan(List.of(missing), Map.of(c0, a.deviceIds()), Map.of(), T0.plusSeconds(29), GRACE, NODE))
                .containsExactly(new Reconciler.Present("a"), new Reconciler.Bind("a", c0, quota(60, Priority.BEST_EFFORT, Double.NaN), false));
    }

    @Test
    void theSameIdsAllocatedAgainBelongToTheNewestAllocation() {
        Set<String> same = ids("GPU-a", 0, 20);
        Allocation old = allocation("old", "GPU-a", same, 0);
        Allocation fresh = allocation("fresh", "GPU-a", same, 60);
        ContainerRef c0 = new ContainerRef("ns", "next", "c0");
        assertThat(Reconciler.plan(List.of(old, fresh), Map.of(c0, same), Map.of(), T0.plusSeconds(61), GRACE, NODE))
                .containsExactlyInAnyOrder(new Reconciler.Missing("old", T0.plusSeconds(61)),
                        new Reconciler.Bind("fresh", c0, quota(40, Priority.BEST_EFFORT, Double.NaN), false));
    }

    @Test
    void anAnnotationThatDisagreesWithTheNodeIsRewrittenToWhatTheContainersHold() {
        Allocation a0 = allocation("a0", "GPU-b", ids("GPU-b", 0, 30), 0);
        Allocation a1 = allocation("a1", "GPU-c", ids("GPU-c", 0, 30), 0);
        ContainerRef c0 = new ContainerRef("ns", "split", "c0");
        ContainerRef c1 = new ContainerRef("ns", "split", "c1");
        PodView wrong = pod("split", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a,GPU-c"), 30, 30);
        Map<ContainerRef, Set<String>> listing = Map.of(c0, a0.deviceIds(), c1, a1.deviceIds());
        assertThat(Reconciler.plan(List.of(a0, a1), listing, byKey(wrong), T0, GRACE, NODE))
                .filteredOn(Reconciler.CorrectAnnotation.class::isInstance)
                .containsExactly(new Reconciler.CorrectAnnotation(wrong.key(), "uid-split", Reconciler.Mismatch.DIFFERENT, "GPU-b,GPU-c"));

        PodView unset = pod("split", Map.of(), 30, 30);
        assertThat(Reconciler.plan(List.of(a0, a1), listing, byKey(unset), T0, GRACE, NODE))
                .filteredOn(Reconciler.CorrectAnnotation.class::isInstance)
                .containsExactly(new Reconciler.CorrectAnnotation(unset.key(), "uid-split", Reconciler.Mismatch.MISSING, "GPU-b,GPU-c"));

        PodView right = pod("split", Map.of(DiluNames.ASSIGNED_GPUS, "GPU-b, GPU-c"), 30, 30);
        assertThat(Reconciler.plan(List.of(a0, a1), listing, byKey(right), T0, GRACE, NODE))
                .noneMatch(Reconciler.CorrectAnnotation.class::isInstance);

        // Judged only once every GPU container of the pod is listed.
        assertThat(Reconciler.plan(List.of(a0, a1), Map.of(c0, a0.deviceIds()), byKey(wrong), T0, GRACE, NODE))
                .noneMatch(Reconciler.CorrectAnnotation.class::isInstance);
    }
}
