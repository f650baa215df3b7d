package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The expected-fragmentation term, learned from what is booked, and what it changes in Algorithm 1. */
class FragmentationOutlookTest {

    private static final long GB = 1024;

    private static ClusterState cluster(int nodes, int gpusPerNode) {
        List<NodeInventory> inventory = new java.util.ArrayList<>();
        for (int n = 0; n < nodes; n++) {
            inventory.add(NodeInventory.uniform("n" + n, gpusPerNode, "A100-40GB", 40 * GB, 108));
        }
        return new ClusterState(inventory);
    }

    private static void book(ClusterState state, String id, int request, int... gpus) {
        List<Slot> slots = java.util.Arrays.stream(gpus)
                .mapToObj(g -> new Slot(state.gpu(g).uuid(), request, request, GB)).toList();
        state.apply(id, id, new PlacementDecision.Placed(state.nodeName(state.nodeOf(gpus[0])), slots));
    }

    @Test
    void aShareNoBookedInstanceCouldUseCountsAsFragmentation() {
        ClusterState state = cluster(1, 2);
        FragmentationOutlook outlook = new FragmentationOutlook(1000);
        assertThat(outlook.delta(state, 0, 300)).as("nothing booked, nothing learned").isZero();
        book(state, "x1", 300, 0);
        book(state, "x2", 300, 0);
        book(state, "y", 300, 1);
        // Every booked instance asks 30%: GPU 0 would keep 10% that none of them could use, GPU 1 40% that one could.
        assertThat(outlook.delta(state, 0, 300)).isCloseTo(0.1, within(1e-9));
        assertThat(outlook.delta(state, 1, 300)).isCloseTo(0.0, within(1e-9));
        // Once they are gone the lesson is forgotten with them.
        state.release("x1");
        state.release("x2");
        state.release("y");
        assertThat(outlook.delta(state, 0, 300)).isZero();
    }

    @Test
    void takingAGpuANodesMultiGpuInstanceNeedsCountsTheWholeNode() {
        ClusterState state = cluster(2, 2);
        FragmentationOutlook outlook = new FragmentationOutlook(1000);
        book(state, "pair", 1000, 0, 1); // node 0 full; the mix is one class: 2 whole GPUs
        // Node 1 holds one such instance while both GPUs are free; 10% on one leaves all 190% unusable for it.
        assertThat(outlook.delta(state, 2, 100)).isCloseTo(1.9, within(1e-9));
    }

    @Test
    void weightedItTurnsBestFitAwayFromAShareNobodyCouldUse() {
        ClusterState state = cluster(1, 2);
        book(state, "x1", 300, 0);
        book(state, "x2", 300, 0);
        book(state, "y", 300, 1);
        InstanceRequest next = new InstanceRequest("z", "z", 1, 300, 300, GB, false);
        PlacementDecision paper = new ComplementaryPlacement().decide(state, next);
        PlacementDecision weighted = new ComplementaryPlacement(new PlacementParameters(1000, 1500, 0.6, 0.4, 20, 4, 1024))
                .decide(state, next);
        assertThat(((PlacementDecision.Placed) paper).slots().getFirst().gpuUuid()).as("best fit: the fuller GPU")
                .isEqualTo(state.gpu(0).uuid());
        assertThat(((PlacementDecision.Placed) weighted).slots().getFirst().gpuUuid()).isEqualTo(state.gpu(1).uuid());
    }
}
