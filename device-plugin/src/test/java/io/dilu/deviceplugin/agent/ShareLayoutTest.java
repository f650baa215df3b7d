package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.quota.Priority;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ShareLayoutTest {

    static final GpuDevice GPU0 = new GpuDevice("GPU-b", 0, "A100-40GB", 40_960, 108);
    static final GpuDevice GPU1 = new GpuDevice("GPU-a", 1, "A100-40GB", 40_960, 108);
    static final ShareLayout NODE = new ShareLayout(List.of(GPU0, GPU1));

    static Allocation share(String first, Map<String, Integer> percentByGpu, Allocation.ShareQuota quota) {
        Set<String> ids = new HashSet<>();
        percentByGpu.forEach((gpu, n) -> ids.addAll(ReconcilerTest.ids(gpu, 0, n)));
        return new Allocation("a", first, ids, Instant.EPOCH, Optional.empty(), quota, Optional.empty());
    }

    @Test
    void aShareOnOneGpuIsOnePart() {
        Allocation a = share("GPU-a", Map.of("GPU-a", 30), new Allocation.ShareQuota(60, Priority.SLO, Double.NaN, 4096));
        assertThat(NODE.devices(a)).containsExactly(new ShareLayout.Device(1, "GPU-a", 30, 60, 4096));
    }

    @Test
    void aSplitShareIsDividedAsItsStagesSayInTheNodesOrder() {
        // The stages' memory weighs the limit as the scheduler weighed it: 40 over 15 GiB and 9 GiB is 25 and 15.
        Allocation staged = share("GPU-b", Map.of("GPU-a", 8, "GPU-b", 12), new Allocation.ShareQuota(40, Priority.SLO,
                Double.NaN, 24_576, Map.of("GPU-b", 15_360L, "GPU-a", 9_216L)));
        assertThat(NODE.devices(staged)).containsExactly(new ShareLayout.Device(0, "GPU-b", 12, 25, 15_360),
                new ShareLayout.Device(1, "GPU-a", 8, 15, 9_216));
        // Stages that do not add up to the container's memory: memory and limit both follow the percents.
        Allocation unstaged = share("GPU-b", Map.of("GPU-a", 10, "GPU-b", 30), new Allocation.ShareQuota(80, Priority.SLO,
                Double.NaN, 4_000, Map.of("GPU-b", 1L, "GPU-a", 1L)));
        assertThat(NODE.devices(unstaged)).containsExactly(new ShareLayout.Device(0, "GPU-b", 30, 60, 3_000),
                new ShareLayout.Device(1, "GPU-a", 10, 20, 1_000));
    }

    @Test
    void noPartOfASplitShareGetsLessThanItsRequest() {
        Allocation a = share("GPU-b", Map.of("GPU-a", 5, "GPU-b", 15), new Allocation.ShareQuota(20, Priority.SLO, Double.NaN,
                2_000, Map.of("GPU-b", 1_000L, "GPU-a", 1_000L)));
        assertThat(NODE.devices(a)).extracting(ShareLayout.Device::smLimit).containsExactly(15, 10);
    }

    @Test
    void aGpuTheNodeLacksComesLastAndHasNoIndex() {
        Allocation a = share("GPU-b", Map.of("GPU-0", 10, "GPU-b", 10), new Allocation.ShareQuota(40, Priority.SLO,
                Double.NaN, 2_000));
        assertThat(NODE.devices(a)).extracting(ShareLayout.Device::gpu, ShareLayout.Device::uuid).containsExactly(
                org.assertj.core.groups.Tuple.tuple(0, "GPU-b"), org.assertj.core.groups.Tuple.tuple(-1, "GPU-0"));
        assertThat(NODE.inOrder(Set.of(GPU1, GPU0))).containsExactly(GPU0, GPU1);
    }
}
