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
                new ParkedEviction.Parked("new", gpu(0), 10_000, T0.plusSeconds(60)),
                new ParkedEviction.Parked("old", gpu(0), 10_000, T0),
                new ParkedEviction.Parked("older", gpu(0), 10_000, T0.minusSeconds(60)));
        // 960 MiB free; 12,000 asked: two of the three must go, the two parked longest ago.
        assertThat(ParkedEviction.victims(state, 12_000, parked)).extracting(ParkedEviction.Parked::id)
                .containsExactly("older", "old");
        assertThat(ParkedEviction.victims(state, 900, parked)).as("room enough already: none").isEmpty();
        assertThat(ParkedEviction.victims(state, 31_000, parked)).as("not even all three make room").isEmpty();
    }

    @Test
    void theGpuThatNeedsFewerVictimsIsChosen() {
        ClusterState state = cluster(40_000, 35_000);
        List<ParkedEviction.Parked> parked = List.of(
                new ParkedEviction.Parked("a1", gpu(0), 5_000, T0.minusSeconds(100)),
                new ParkedEviction.Parked("a2", gpu(0), 5_000, T0.minusSeconds(90)),
                new ParkedEviction.Parked("b1", gpu(1), 10_000, T0));
        // 9,000 MiB: GPU 0 has 960 free and needs both of its parked; GPU 1 has 5,960 and needs its one.
        assertThat(ParkedEviction.victims(state, 9_000, parked)).extracting(ParkedEviction.Parked::id).containsExactly("b1");
    }

    @Test
    void aGpuThatOnlyParkedInstancesHoldIsHandedBack() {
        NodeInventory node = NodeInventory.uniform("n", 2, "A100", 40_960, 108);
        ClusterState state = new ClusterState(List.of(node));
        state.apply("parked-a", "f", new PlacementDecision.Placed("n", List.of(new Slot(gpu(0), 0, 0, 5_000))));
        state.apply("parked-b", "g", new PlacementDecision.Placed("n", List.of(new Slot(gpu(0), 0, 0, 5_000))));
        state.apply("parked-c", "f", new PlacementDecision.Placed("n", List.of(new Slot(gpu(1), 0, 0, 5_000))));
        state.apply("serving", "h", new PlacementDecision.Placed("n", List.of(new Slot(gpu(1), 300, 600, 5_000))));
        List<ParkedEviction.Parked> parked = List.of(new ParkedEviction.Parked("parked-a", gpu(0), 5_000, T0),
                new ParkedEviction.Parked("parked-b", gpu(0), 5_000, T0),
                new ParkedEviction.Parked("parked-c", gpu(1), 5_000, T0));
        assertThat(ParkedEviction.alone(state, parked)).extracting(ParkedEviction.Parked::id)
                .as("GPU 0 holds parked models alone; GPU 1 serves anyway").containsExactlyInAnyOrder("parked-a", "parked-b");

        List<ParkedEviction.Parked> lastKept = List.of(new ParkedEviction.Parked("parked-a", gpu(0), 5_000, T0, true),
                parked.get(1), parked.get(2));
        assertThat(ParkedEviction.alone(state, lastKept)).as("a revision's last instance kept in the request path keeps GPU 0")
                .isEmpty();
    }
}
