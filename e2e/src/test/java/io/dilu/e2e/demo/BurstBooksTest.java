package io.dilu.e2e.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Where a burst's pods sat and what they got there, on made-up pods and grants. */
class BurstBooksTest {

    @Test
    void eachGpuOfAScaleOutIsToldWithTheLimitsItPromisedAndTheGrantsItGave() {
        List<BurstBooks.Placed> pods = List.of(new BurstBooks.Placed("a", "GPU-1", 40), new BurstBooks.Placed("b", "GPU-1", 40),
                new BurstBooks.Placed("c", "GPU-2", 40));
        List<BurstBooks.Grant> grants = List.of(
                new BurstBooks.Grant(50, "GPU-1", "a", 40), new BurstBooks.Grant(50, "GPU-1", "b", 38),
                new BurstBooks.Grant(55, "GPU-1", "a", 30), new BurstBooks.Grant(55, "GPU-1", "b", 30),
                new BurstBooks.Grant(55, "GPU-2", "c", 40),
                // outside the window: not counted
                new BurstBooks.Grant(80, "GPU-2", "c", 20));
        assertThat(BurstBooks.where(pods, grants, 52, 45, 75)).isEqualTo("at t=52 s its 3 pod(s) sat 2 on GPU-1 (their limits"
                + " 80% of the GPU; granted 69% of the GPU on average at t=45–75 s); 1 on GPU-2 (their limits 40% of the GPU;"
                + " granted 40% of the GPU on average at t=45–75 s)");
        assertThat(BurstBooks.where(pods, List.of(), 52, 45, 75)).endsWith("(their limits 40% of the GPU; no grant seen there"
                + " at t=45–75 s)");
    }

    @Test
    void theBurstsWindowsRepeatWithTheStory() {
        assertThat(BurstBooks.burstAt(44)).isNull();
        assertThat(BurstBooks.burstAt(45)).isEqualTo(BurstBooks.BURSTS.getFirst());
        assertThat(BurstBooks.burstAt(74)).isEqualTo(BurstBooks.BURSTS.getFirst());
        assertThat(BurstBooks.burstAt(75)).isNull();
        assertThat(BurstBooks.burstAt(ClusterDemo.THIRD_BURST + 19)).isEqualTo(BurstBooks.BURSTS.getLast());
        assertThat(BurstBooks.burstAt(ClusterDemo.STORY_SECONDS + 50)).isEqualTo(BurstBooks.BURSTS.getFirst());
    }
}
