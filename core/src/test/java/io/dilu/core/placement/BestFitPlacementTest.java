package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class BestFitPlacementTest {

    final BestFitPlacement bestFit = new BestFitPlacement();

    static InstanceRequest req(String id, int milli, long memory, int gpus) {
        return new InstanceRequest(id, "f-" + id, gpus, milli, milli, memory, false);
    }

    static PlacementDecision.Placed place(ClusterState state, PlacementPolicy policy, InstanceRequest r) {
        var placed = (PlacementDecision.Placed) policy.decide(state, r);
        state.apply(r.id(), r.function(), placed);
        return placed;
    }

    @Test
    void takesTheGpuLeftWithTheLeastFreeSm() {
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 2, "g", 16_384, 80),
                NodeInventory.uniform("b", 1, "g", 16_384, 80)));
        String sixty = place(state, bestFit, req("x", 600, 1000, 1)).slots().getFirst().gpuUuid();
        String thirty = place(state, new ExclusivePlacement(), req("y", 300, 1000, 1)).slots().getFirst().gpuUuid();
        assertThat(thirty).isNotEqualTo(sixty);
        var tight = place(state, bestFit, req("z", 400, 1000, 1));
        assertThat(tight.slots().getFirst().gpuUuid()).as("60% + 40% leaves nothing free").isEqualTo(sixty);
        var small = place(state, bestFit, req("s", 600, 1000, 1));
        assertThat(small.slots().getFirst().gpuUuid()).as("30% + 60% beats an idle GPU").isEqualTo(thirty);
    }

    @Test
    void memoryStillBindsAndNothingIsOverbooked() {
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 1, "g", 16_384, 80)));
        place(state, bestFit, req("x", 100, 16_000, 1));
        assertThat(bestFit.decide(state, req("y", 100, 1000, 1))).isInstanceOf(PlacementDecision.Infeasible.class);
        assertThat(bestFit.decide(state, req("z", 950, 100, 1))).isInstanceOf(PlacementDecision.Infeasible.class);
    }

    @Test
    void aMultiGpuInstanceLandsOnTheNodeItFillsBest() {
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 4, "g", 16_384, 80),
                NodeInventory.uniform("b", 2, "g", 16_384, 80)));
        place(state, bestFit, req("x", 500, 1000, 1));
        var two = place(state, bestFit, req("t", 500, 1000, 2));
        assertThat(two.slots()).hasSize(2).extracting(Slot::gpuUuid).doesNotHaveDuplicates();
        assertThat(two.node()).isEqualTo("a"); // a-0 (half used) and another GPU of a leave the least SM free
        assertThat(bestFit.decide(state, req("w", 100, 100, 5))).isInstanceOf(PlacementDecision.Infeasible.class);
    }
}
