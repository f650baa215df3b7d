package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.dilu.core.placement.FragmentationGradientPlacement.TaskClass;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FragmentationGradientPlacementTest {

    static InstanceRequest req(String id, int milli, int gpus) {
        return new InstanceRequest(id, "f-" + id, gpus, milli, milli, 1000, false);
    }

    /** Books {@code milli} on one GPU directly, whatever a policy would do. */
    static void book(ClusterState state, String id, String node, String gpu, int milli) {
        state.apply(id, "f-" + id, new PlacementDecision.Placed(node, List.of(new Slot(gpu, milli, milli, 1000))));
    }

    static List<String> gpusOf(PlacementDecision decision) {
        return ((PlacementDecision.Placed) decision).slots().stream().map(Slot::gpuUuid).toList();
    }

    @Test
    void fragmentationOfASmallNodeByHand() {
        // popularities 5:3:2 normalise to 0.5, 0.3, 0.2
        var fgd = new FragmentationGradientPlacement(List.of(new TaskClass(500, 1, 5), new TaskClass(1000, 1, 3),
                new TaskClass(1000, 2, 2)));
        int[] free = {1000, 600, 300, 0};
        // 500 fits GPUs 0 and 1: the 300 and 0 left on GPUs 2 and 3 are its fragment
        assertThat(FragmentationGradientPlacement.fragmentation(free, fgd.workload().get(0))).isEqualTo(300);
        // one whole GPU fits GPU 0 only: 600 + 300 + 0
        assertThat(FragmentationGradientPlacement.fragmentation(free, fgd.workload().get(1))).isEqualTo(900);
        // two whole GPUs do not fit the node at all: all 1,900 free is fragment
        assertThat(FragmentationGradientPlacement.fragmentation(free, fgd.workload().get(2))).isEqualTo(1900);
        // 0.5 × 300 + 0.3 × 900 + 0.2 × 1900 = 150 + 270 + 380
        assertThat(fgd.expectedFragmentation(free)).isCloseTo(800.0, within(1e-9));
        assertThat(fgd.expectedFragmentation(new int[] {0, 300, 1000, 600})).as("GPU order does not matter")
                .isCloseTo(800.0, within(1e-9));
        assertThat(fgd.expectedFragmentation(new int[] {0, 0})).isZero();
    }

    @Test
    void leavesNoUnusableFragmentWhereBestFitDoes() {
        // tasks of half a GPU are 90% of the workload, whole GPUs 10%
        var fgd = new FragmentationGradientPlacement(List.of(new TaskClass(500, 1, 0.9), new TaskClass(1000, 1, 0.1)));
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 2, "g", 16_384, 80)));
        book(state, "old", "a", "a-gpu0", 300);
        InstanceRequest task = req("x", 400, 1);
        // best fit: GPU 0 keeps 300 free (vs 600 on GPU 1) — 300 that no task of the workload can use
        assertThat(gpusOf(new BestFitPlacement().decide(state, task))).containsExactly("a-gpu0");
        // FGD: before [700, 1000] → 0.1 × 700 = 70; on GPU 0 → [300, 1000] → 0.9 × 300 + 0.1 × 300 = 300 (+230);
        // on GPU 1 → [700, 600] → 0 + 0.1 × 1300 = 130 (+60)
        assertThat(gpusOf(fgd.decide(state, task))).containsExactly("a-gpu1");
        // without whole-GPU tasks in the workload the 600 left is still usable, and FGD still avoids the 300
        var halves = new FragmentationGradientPlacement(List.of(new TaskClass(500, 1, 1)));
        assertThat(gpusOf(halves.decide(state, task))).containsExactly("a-gpu1");
        // with only whole-GPU tasks, keeping GPU 1 whole matters more: FGD then agrees with best fit
        var wholes = new FragmentationGradientPlacement(List.of(new TaskClass(1000, 1, 1)));
        assertThat(gpusOf(wholes.decide(state, task))).containsExactly("a-gpu0");
    }

    @Test
    void keepsANodeWholeForTwoGpuTasks() {
        var fgd = new FragmentationGradientPlacement(List.of(new TaskClass(1000, 2, 1), new TaskClass(500, 1, 1)));
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 2, "g", 16_384, 80),
                NodeInventory.uniform("b", 2, "g", 16_384, 80)));
        book(state, "old", "b", "b-gpu1", 500);
        InstanceRequest whole = req("w", 1000, 1);
        // best fit: every idle GPU is left with 0, the lowest ordinal wins
        assertThat(gpusOf(new BestFitPlacement().decide(state, whole))).containsExactly("a-gpu0");
        // FGD: on a, 0 → 0.5 × 1000 (+500); on b, [1000, 500] → 0.5 × 1500 = 750 becomes [0, 500] → 250 (−500)
        assertThat(gpusOf(fgd.decide(state, whole))).containsExactly("b-gpu0");
        // and the two-GPU task then still fits a
        assertThat(gpusOf(fgd.decide(state, req("pair", 1000, 2)))).containsExactly("a-gpu0", "a-gpu1");
    }

    @Test
    void refusesWhatFitsNowhereAndRespectsMemory() {
        var fgd = new FragmentationGradientPlacement(List.of(new TaskClass(500, 1, 1)));
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 2, "g", 16_384, 80)));
        book(state, "old", "a", "a-gpu0", 600);
        assertThat(fgd.decide(state, req("three", 1000, 2))).isInstanceOf(PlacementDecision.Infeasible.class);
        assertThat(fgd.decide(state, req("big", 1000, 3))).isInstanceOf(PlacementDecision.Infeasible.class);
        InstanceRequest half = req("h", 500, 1);
        assertThat(gpusOf(fgd.decide(state, half))).containsExactly("a-gpu1");
        // GPU 1 keeps room for the share but not for the memory, and GPU 0 has 400 free: nowhere
        state.apply("mem", "f-mem", new PlacementDecision.Placed("a", List.of(new Slot("a-gpu1", 1, 1, 16_000))));
        assertThat(fgd.decide(state, half)).isInstanceOf(PlacementDecision.Infeasible.class);
    }

    @Test
    void workloadFromRequestsKeepsThePopularClasses() {
        List<InstanceRequest> requests = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            requests.add(req("h" + i, 500, 1));
        }
        for (int i = 0; i < 3; i++) {
            requests.add(req("w" + i, 1000, 1));
        }
        requests.add(req("q", 250, 1));
        assertThat(FragmentationGradientPlacement.workloadOf(requests, 0.9)).containsExactly(
                new TaskClass(500, 1, 6 / 9.0), new TaskClass(1000, 1, 3 / 9.0));
        assertThat(FragmentationGradientPlacement.workloadOf(requests, 1.0)).hasSize(3);
    }
}
