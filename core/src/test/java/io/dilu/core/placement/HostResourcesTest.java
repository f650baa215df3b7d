package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.dilu.core.placement.FragmentationGradientPlacement.TaskClass;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A node's CPU and memory, and requests that ask for them or for no GPU at all (the openb trace's pods). */
class HostResourcesTest {

    private static NodeInventory node(String name, int gpus, long cpu, long memory) {
        return NodeInventory.uniform(name, gpus, "T4", 16_384, 80).withHost(cpu, memory);
    }

    private static InstanceRequest gpuPod(String id, int milli, long cpu, long memory) {
        return new InstanceRequest(id, id, 1, milli, milli, 1_024, false, Set.of(), cpu, memory);
    }

    @Test
    void badValuesAreRefusedNamingTheFieldAndItsRange() {
        assertThatThrownBy(() -> NodeInventory.uniform("n", 1, "T4", 16_384, 80).withHost(-1, 0))
                .hasMessage("node n: cpuMilli must be in 0..9223372036854775807 (UNLIMITED when not modelled), got -1");
        assertThatThrownBy(() -> NodeInventory.uniform("n", 1, "T4", 16_384, 80).withHost(0, -2))
                .hasMessage("node n: memoryMib must be in 0..9223372036854775807 (UNLIMITED when not modelled), got -2");
        assertThatThrownBy(() -> gpuPod("p", 100, -3, 0))
                .hasMessage("cpuMilli must be in 0..9223372036854775807, got -3");
        assertThatThrownBy(() -> gpuPod("p", 100, 0, -4))
                .hasMessage("hostMemoryMib must be in 0..9223372036854775807, got -4");
        assertThatThrownBy(() -> new InstanceRequest("p", "p", -1, 100, 100, 1, false))
                .hasMessage("gpus must be at least 0 (0: a CPU-only request), got -1");
        assertThatThrownBy(() -> new InstanceRequest("p", "p", 0, 100, 100, 1, false))
                .hasMessageStartingWith("a CPU-only request (gpus = 0) asks no GPU: requestMilli, limitMilli and memoryMib must be 0");
        assertThat(InstanceRequest.cpuOnly("c", "c", 1_000, 2_048).cpuOnly()).isTrue();
    }

    @Test
    void bookingsNeverPassANodesCpuOrMemoryAndAReleaseGivesThemBack() {
        ClusterState state = new ClusterState(List.of(node("n", 2, 8_000, 16_384)));
        state.apply(InstanceRequest.cpuOnly("c", "c", 6_000, 4_096), new PlacementDecision.Placed("n", List.of()));
        assertThat(state.cpuFree(0)).isEqualTo(2_000);
        assertThat(state.isUsed(0)).as("a CPU-only pod uses its node").isTrue();
        assertThat(state.activeGpuCount()).isZero();
        InstanceRequest big = gpuPod("g", 500, 4_000, 1_024);
        assertThatThrownBy(() -> state.apply(big, new PlacementDecision.Placed("n", List.of(new Slot("n-gpu0", 500, 500, 1_024)))))
                .hasMessage("node n has 2000 milli-CPU and 12288 MiB free, 4000 milli-CPU and 1024 MiB asked");
        assertThat(state.activeGpuCount()).as("a refused booking changes nothing").isZero();
        assertThat(new ComplementaryPlacement().decide(state, big)).isInstanceOf(PlacementDecision.Infeasible.class);
        assertThat(state.release("c")).isTrue();
        assertThat(state.cpuFree(0)).isEqualTo(8_000);
        assertThat(state.isUsed(0)).isFalse();
        assertThat(new ComplementaryPlacement().decide(state, big)).isInstanceOf(PlacementDecision.Placed.class);
    }

    @Test
    void diluPutsACpuOnlyPodWhereItTakesTheLeastFromGpuPods() {
        ClusterState state = new ClusterState(List.of(node("a", 2, 32_000, 65_536), node("b", 2, 32_000, 65_536),
                node("c", 2, 64_000, 65_536)));
        ComplementaryPlacement dilu = new ComplementaryPlacement();
        InstanceRequest first = InstanceRequest.cpuOnly("first", "x", 4_000, 4_096);
        PlacementDecision.Placed p = (PlacementDecision.Placed) dilu.decide(state, first);
        assertThat(p.node()).as("every GPU free everywhere: the best fit on CPU, a 32-core node").isEqualTo("a");
        assertThat(p.slots()).isEmpty();
        state.apply(first, p);
        InstanceRequest gpu = gpuPod("gpu", 500, 2_000, 1_024);
        state.apply(gpu, new PlacementDecision.Placed("b", List.of(new Slot("b-gpu0", 500, 500, 1_024))));
        // b has the least GPU share free (1,500 against a's and c's 2,000): a GPU pod could use less of what b has left
        assertThat(((PlacementDecision.Placed) dilu.decide(state, InstanceRequest.cpuOnly("next", "y", 1_000, 1_024))).node())
                .isEqualTo("b");
        // too large for a or b: c
        assertThat(((PlacementDecision.Placed) dilu.decide(state, InstanceRequest.cpuOnly("huge", "z", 40_000, 1_024))).node())
                .isEqualTo("c");
        assertThat(dilu.decide(state, InstanceRequest.cpuOnly("none", "z", 65_000, 1))).isInstanceOf(PlacementDecision.Infeasible.class);
        // a node without GPUs takes nothing from GPU pods at all
        ClusterState withCpuNode = new ClusterState(List.of(node("a", 2, 32_000, 65_536), node("cpu", 0, 96_000, 65_536)));
        assertThat(((PlacementDecision.Placed) dilu.decide(withCpuNode, first)).node()).isEqualTo("cpu");
    }

    @Test
    void diluLeavesNoGpuOutOfReachForWantOfItsNodesCpu() {
        ComplementaryPlacement dilu = new ComplementaryPlacement();
        InstanceRequest next = gpuPod("next", 500, 6_000, 1_024);
        // a-gpu0 is the fuller active GPU, but after `next` a would keep 4 cores: another like it could not use
        // the 1,100 of GPU share a still has free. b-gpu0 leaves b 56 cores.
        ClusterState state = new ClusterState(List.of(node("a", 2, 12_000, 65_536), node("b", 2, 64_000, 65_536)));
        state.apply(gpuPod("x", 400, 2_000, 1_024), new PlacementDecision.Placed("a", List.of(new Slot("a-gpu0", 400, 400, 1_024))));
        state.apply(gpuPod("y", 200, 2_000, 1_024), new PlacementDecision.Placed("b", List.of(new Slot("b-gpu0", 200, 200, 1_024))));
        assertThat(((PlacementDecision.Placed) dilu.decide(state, next)).slots()).extracting(Slot::gpuUuid)
                .containsExactly("b-gpu0");
        // The same nodes with their CPU not modelled: Algorithm 1's best fit, a-gpu0.
        ClusterState unmodelled = new ClusterState(List.of(node("a", 2, 12_000, 65_536).withoutHost(),
                node("b", 2, 64_000, 65_536).withoutHost()));
        unmodelled.apply("x", "x", new PlacementDecision.Placed("a", List.of(new Slot("a-gpu0", 400, 400, 1_024))));
        unmodelled.apply("y", "y", new PlacementDecision.Placed("b", List.of(new Slot("b-gpu0", 200, 200, 1_024))));
        assertThat(((PlacementDecision.Placed) dilu.decide(unmodelled, next)).slots()).extracting(Slot::gpuUuid)
                .containsExactly("a-gpu0");
    }

    @Test
    void aNewGpuComesFromAnEmptyNodeWhenTheNodesInUseWouldStrandTheirOwn() {
        ComplementaryPlacement dilu = new ComplementaryPlacement();
        ClusterState state = new ClusterState(List.of(node("a", 2, 12_000, 65_536), node("b", 2, 64_000, 65_536)));
        state.apply(gpuPod("full", 1000, 4_000, 1_024), new PlacementDecision.Placed("a", List.of(new Slot("a-gpu0", 1000, 1000, 1_024))));
        // a-gpu1 would keep 2 of a's 8 free cores, too few for another like this one: its other 500 strand.
        assertThat(((PlacementDecision.Placed) dilu.decide(state, gpuPod("wide", 500, 6_000, 1_024))).slots())
                .extracting(Slot::gpuUuid).containsExactly("b-gpu0");
        // With 4 cores asked, a keeps enough for another: the node in use first, so b stays whole.
        assertThat(((PlacementDecision.Placed) dilu.decide(state, gpuPod("narrow", 500, 4_000, 1_024))).slots())
                .extracting(Slot::gpuUuid).containsExactly("a-gpu1");
    }

    @Test
    void fgdCountsTheGpusOfANodeShortOfCpuAsFragments() {
        // One class: half a GPU with 8 cores, on T4 only.
        var fgd = new FragmentationGradientPlacement(List.of(new TaskClass(8_000, 500, 1, Set.of("T4"), 1)));
        ClusterState state = new ClusterState(List.of(node("a", 2, 16_000, 65_536), node("b", 2, 16_000, 65_536),
                NodeInventory.uniform("v", 2, "V100M16", 16_384, 80).withHost(64_000, 65_536)));
        state.apply(gpuPod("full", 1000, 0, 1_024), new PlacementDecision.Placed("b", List.of(new Slot("b-gpu0", 1000, 1000, 1_024))));
        state.apply(gpuPod("full2", 1000, 0, 1_024), new PlacementDecision.Placed("b", List.of(new Slot("b-gpu1", 1000, 1000, 1_024))));
        // A CPU-only pod of 10 cores: on a it leaves 6 cores, too few for the class, so a's 2,000 free become
        // fragment (+2,000); on b (GPUs full) it costs nothing; v's GPUs are of a model the class may not use,
        // fragment already, and stay so (+0): the tie goes to the lower node, b.
        InstanceRequest cpu = InstanceRequest.cpuOnly("cpu", "cpu", 10_000, 1_024);
        assertThat(((PlacementDecision.Placed) fgd.decide(state, cpu)).node()).isEqualTo("b");
        // Expected fragmentation by hand: v counts all its free share (no access), a none of it.
        assertThat(fgd.expectedFragmentation(new int[] {1000, 1000})).isCloseTo(0, within(1e-9));
        // workloadOf keeps CPU and models in the classes, CPU-only requests as classes of their own
        List<TaskClass> classes = FragmentationGradientPlacement.workloadOf(List.of(cpu, cpu, gpuPod("g", 500, 8_000, 0)), 1);
        assertThat(classes).containsExactly(new TaskClass(10_000, 0, 0, Set.of(), 2 / 3.0), new TaskClass(8_000, 500, 1, Set.of(), 1 / 3.0));
    }

    @Test
    void nodeBestFitScoresCpuAndGpuTogether() {
        NodeBestFitPlacement bestFit = new NodeBestFitPlacement();
        ClusterState state = new ClusterState(List.of(node("a", 2, 64_000, 65_536), node("b", 2, 16_000, 65_536)));
        // both nodes have 2,000 GPU share free; b has less CPU free: b
        PlacementDecision.Placed p = (PlacementDecision.Placed) bestFit.decide(state, gpuPod("x", 300, 1_000, 1_024));
        assertThat(p.node()).isEqualTo("b");
        state.apply(gpuPod("x", 300, 1_000, 1_024), p);
        // the tightest GPU of b for the next share
        PlacementDecision.Placed q = (PlacementDecision.Placed) bestFit.decide(state, gpuPod("y", 300, 1_000, 1_024));
        assertThat(q.slots()).extracting(Slot::gpuUuid).containsExactly(p.slots().getFirst().gpuUuid());
        // a whole GPU takes the first idle one
        state.apply(gpuPod("y", 300, 1_000, 1_024), q);
        PlacementDecision.Placed w = (PlacementDecision.Placed) bestFit.decide(state, gpuPod("w", 1000, 1_000, 1_024));
        assertThat(w.slots()).extracting(Slot::gpuUuid).containsExactly("b-gpu1");
    }

    @Test
    void asTheirSimulatorScoresNearTiesGoToTheFirstNode() {
        // FGD: on b, 10 milli into the 10 left on a GPU removes a fragment of 10 (−10); anywhere else changes nothing.
        var classes = List.of(new TaskClass(500, 1, 1));
        ClusterState state = new ClusterState(List.of(NodeInventory.uniform("a", 1, "T4", 16_384, 80),
                NodeInventory.uniform("b", 2, "T4", 16_384, 80)));
        state.apply("old", "old", new PlacementDecision.Placed("b", List.of(new Slot("b-gpu1", 990, 990, 1_024))));
        InstanceRequest tiny = new InstanceRequest("t", "t", 1, 10, 10, 1_024, false);
        assertThat(((PlacementDecision.Placed) new FragmentationGradientPlacement(classes).decide(state, tiny)).slots())
                .extracting(Slot::gpuUuid).containsExactly("b-gpu1");
        // ⌊100 × sigmoid(0.01)⌋ = ⌊100 × sigmoid(0)⌋ = 50: a tie, the first node wins
        assertThat(((PlacementDecision.Placed) new FragmentationGradientPlacement(classes,
                FragmentationGradientPlacement.Scoring.SIMULATOR).decide(state, tiny)).slots())
                .extracting(Slot::gpuUuid).containsExactly("a-gpu0");

        // Best fit: b is the tighter fit by 1,000 milli-CPU, 0.4 points of 100 — the same integer score as a
        ClusterState nodes = new ClusterState(List.of(node("a", 2, 64_000, 65_536), node("b", 2, 63_000, 65_536)));
        InstanceRequest half = gpuPod("h", 500, 1_000, 1_024);
        assertThat(((PlacementDecision.Placed) new NodeBestFitPlacement().decide(nodes, half)).node()).isEqualTo("b");
        assertThat(((PlacementDecision.Placed) new NodeBestFitPlacement(FragmentationGradientPlacement.Scoring.SIMULATOR)
                .decide(nodes, half)).node()).isEqualTo("a");
    }
}
