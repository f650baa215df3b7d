package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class ParkedEvictionTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");

    /** One node of two 40 GB GPUs; {@code gpu0Used} and {@code gpu1Used} MiB booked on each. */
    static ClusterState cluster(long gpu0Used, long gpu1Used) {
        NodeInventory node = NodeInventory.uniform("n", 2, "A100", 40_960, 108);
        ClusterState state = new ClusterState(List.of(node));
        state.apply("a", "f", new PlacementDecision.Placed("n", List.of(new Slot(node.gpus().get(0).uuid(), 0, 0, gpu0Used))));
        state.apply("b", "f", new PlacementDecision.Placed("n", List.of(new Slot(node.gpus().get(1).uuid(), 0, 0, gpu1Used))));
        return state;
    }

    static String gpu(int i) {
        return NodeInventory.uniform("n", 2, "A100", 40_960, 108).gpus().get(i).uuid();
    }

    @Test
    void theLeastRecentlyParkedGoFirstAndNoMoreThanThePlacementNeeds() {
        ClusterState state = cluster(40_000, 0);
        List<ParkedEviction.Parked> parked = List.of(
                new ParkedEviction.Parked("new", "t", gpu(0), 10_000, T0.plusSeconds(60)),
                new ParkedEviction.Parked("old", "t", gpu(0), 10_000, T0),
                new ParkedEviction.Parked("older", "t", gpu(0), 10_000, T0.minusSeconds(60)));
        // 960 MiB free; 12,000 asked: two of the three must go, the two parked longest ago.
        assertThat(ParkedEviction.victims(state, "t", 12_000, parked)).extracting(ParkedEviction.Parked::id)
                .containsExactly("older", "old");
        assertThat(ParkedEviction.victims(state, "t", 900, parked)).as("room enough already: none").isEmpty();
        assertThat(ParkedEviction.victims(state, "t", 31_000, parked)).as("not even all three make room").isEmpty();
    }

    @Test
    void theGpuThatNeedsFewerVictimsIsChosen() {
        ClusterState state = cluster(40_000, 35_000);
        List<ParkedEviction.Parked> parked = List.of(
                new ParkedEviction.Parked("a1", "t", gpu(0), 5_000, T0.minusSeconds(100)),
                new ParkedEviction.Parked("a2", "t", gpu(0), 5_000, T0.minusSeconds(90)),
                new ParkedEviction.Parked("b1", "t", gpu(1), 10_000, T0));
        // 9,000 MiB: GPU 0 has 960 free and needs both of its parked; GPU 1 has 5,960 and needs its one.
        assertThat(ParkedEviction.victims(state, "t", 9_000, parked)).extracting(ParkedEviction.Parked::id).containsExactly("b1");
    }

    @Test
    void aTenantTakesItsOwnParkedMemoryFirstAndOfOthersNoMoreThanItAsks() {
        // Issue 45, harm 7: 960 MiB free on GPU 0, where "victim" keeps two parked pods of 15,000 MiB.
        ClusterState state = cluster(40_000, 40_000);
        List<ParkedEviction.Parked> others = List.of(
                new ParkedEviction.Parked("v1", "victim", gpu(0), 15_000, T0.minusSeconds(100)),
                new ParkedEviction.Parked("v2", "victim", gpu(0), 15_000, T0.minusSeconds(90)));
        // 20,000 MiB asked: both would make room, 30,000 MiB of another tenant's cache for a pod of 20,000.
        assertThat(ParkedEviction.victims(state, "attacker", 20_000, others)).isEmpty();
        // 15,000 asked: one of them (15,000, within what it asks).
        assertThat(ParkedEviction.victims(state, "attacker", 15_000, others)).extracting(ParkedEviction.Parked::id)
                .containsExactly("v1");
        // The victim's own asks may take its own cache, as much as it needs.
        assertThat(ParkedEviction.victims(state, "victim", 20_000, others)).extracting(ParkedEviction.Parked::id)
                .containsExactly("v1", "v2");
        // Its own first, though parked later; then another's within what it asks.
        List<ParkedEviction.Parked> mixed = List.of(others.get(0), others.get(1),
                new ParkedEviction.Parked("own", "attacker", gpu(0), 10_000, T0));
        assertThat(ParkedEviction.victims(state, "attacker", 20_000, mixed)).extracting(ParkedEviction.Parked::id)
                .containsExactly("own", "v1");
        // Of two GPUs that would do, the one taking less of other tenants' memory, though it takes more instances.
        List<ParkedEviction.Parked> twoGpus = List.of(others.get(0),
                new ParkedEviction.Parked("own-a", "attacker", gpu(1), 8_000, T0),
                new ParkedEviction.Parked("own-b", "attacker", gpu(1), 8_000, T0));
        assertThat(ParkedEviction.victims(state, "attacker", 15_000, twoGpus)).extracting(ParkedEviction.Parked::id)
                .containsExactly("own-a", "own-b");
    }

    @Test
    void aGpuThatOnlyParkedInstancesHoldIsHandedBack() {
        NodeInventory node = NodeInventory.uniform("n", 2, "A100", 40_960, 108);
        ClusterState state = new ClusterState(List.of(node));
        state.apply("parked-a", "f", new PlacementDecision.Placed("n", List.of(new Slot(gpu(0), 0, 0, 5_000))));
        state.apply("parked-b", "g", new PlacementDecision.Placed("n", List.of(new Slot(gpu(0), 0, 0, 5_000))));
        state.apply("parked-c", "f", new PlacementDecision.Placed("n", List.of(new Slot(gpu(1), 0, 0, 5_000))));
        state.apply("serving", "h", new PlacementDecision.Placed("n", List.of(new Slot(gpu(1), 300, 600, 5_000))));
        List<ParkedEviction.Parked> parked = List.of(new ParkedEviction.Parked("parked-a", "t", gpu(0), 5_000, T0),
                new ParkedEviction.Parked("parked-b", "t", gpu(0), 5_000, T0),
                new ParkedEviction.Parked("parked-c", "t", gpu(1), 5_000, T0));
        assertThat(ParkedEviction.alone(state, parked)).extracting(ParkedEviction.Parked::id)
                .as("GPU 0 holds parked models alone; GPU 1 serves anyway").containsExactlyInAnyOrder("parked-a", "parked-b");

        List<ParkedEviction.Parked> lastKept = List.of(new ParkedEviction.Parked("parked-a", "t", gpu(0), 5_000, T0, true),
                parked.get(1), parked.get(2));
        assertThat(ParkedEviction.alone(state, lastKept)).as("a revision's last instance kept in the request path keeps GPU 0")
                .isEmpty();
    }
}
