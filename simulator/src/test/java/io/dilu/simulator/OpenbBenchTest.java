package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.FragmentationGradientPlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpenbBenchTest {

    static InstanceRequest req(String id, int milli, int gpus) {
        return new InstanceRequest(id, id, gpus, milli, milli, 1000, false);
    }

    static long arrived(List<InstanceRequest> requests) {
        return requests.stream().mapToLong(r -> (long) r.requestMilli() * r.gpus()).sum();
    }

    @Test
    void arrivalsAreTheListThenResampledPodsUpToTheLoad() {
        List<InstanceRequest> list = List.of(req("a", 500, 1), req("b", 1000, 2));
        List<InstanceRequest> arrivals = OpenbBench.fgdArrivals(list, 4000, 1.3, 42);
        assertThat(arrivals.subList(0, 2)).isEqualTo(list);
        assertThat(arrivals.size()).isGreaterThan(2);
        assertThat(arrived(arrivals)).as("never past 130% of 4,000").isLessThanOrEqualTo(5200)
                .as("stopped only when a draw (at most 1,000 per GPU) would pass it").isGreaterThan(4200);
        assertThat(new HashSet<>(arrivals.stream().map(InstanceRequest::id).toList())).hasSize(arrivals.size());
        assertThat(arrivals.subList(2, arrivals.size())).allSatisfy(r -> {
            assertThat(r.id()).contains("-tuned-");
            assertThat(r.requestMilli() == 500 && r.gpus() == 1 || r.requestMilli() == 1000 && r.gpus() == 2).isTrue();
        });
        assertThat(OpenbBench.fgdArrivals(list, 4000, 1.3, 42)).as("the seed fixes the draws").isEqualTo(arrivals);
        assertThat(arrived(OpenbBench.fgdArrivals(list, 1000, 1.3, 42))).as("a list above the load is cut down")
                .isLessThanOrEqualTo(1300);
    }

    @Test
    void allocationIsTheShareOfCapacityPlacedSkippingWhatDoesNotFit() {
        List<NodeInventory> nodes = List.of(NodeInventory.uniform("n", 2, "g", 16_384, 80));
        List<InstanceRequest> arrivals = List.of(req("x", 600, 1), req("y", 600, 1), req("z", 600, 1), req("w", 400, 1));
        OpenbBench.Allocation bestFit = OpenbBench.allocate(new BestFitPlacement(), nodes, arrivals);
        assertThat(bestFit.percent()).isCloseTo(80.0, within(1e-9));
        assertThat(bestFit.unplaced()).isEqualTo(1);
        var fgd = new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(arrivals, 0.95));
        assertThat(OpenbBench.allocate(fgd, nodes, arrivals).percent()).isCloseTo(80.0, within(1e-9));
    }
}
