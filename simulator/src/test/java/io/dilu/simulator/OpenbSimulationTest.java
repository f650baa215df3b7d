package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OpenbSimulationTest {

    @TempDir
    Path dir;

    static InstanceRequest req(String id, int milli, int gpus) {
        return new InstanceRequest(id, id, gpus, milli, milli, 1000, false);
    }

    static long arrived(List<InstanceRequest> requests) {
        return requests.stream().mapToLong(OpenbSimulation::gpuMilli).sum();
    }

    @Test
    void arrivalsAreTheListShuffledThenResampledPodsUpToTheLoad() {
        List<InstanceRequest> list = List.of(req("a", 500, 1), req("b", 1000, 2), req("c", 300, 1),
                InstanceRequest.cpuOnly("d", "d", 1000, 1024));
        List<InstanceRequest> arrivals = OpenbSimulation.arrivals(list, 8000, 1.3, 42);
        assertThat(arrivals.subList(0, 4)).as("the list, shuffled").containsExactlyInAnyOrderElementsOf(list);
        assertThat(arrived(arrivals)).as("never past 130% of 8,000").isLessThanOrEqualTo(10_400)
                .as("stopped only when a draw (at most 1,000 per GPU) would pass it").isGreaterThan(9_400);
        assertThat(new HashSet<>(arrivals.stream().map(InstanceRequest::id).toList())).hasSize(arrivals.size());
        assertThat(arrivals.subList(4, arrivals.size())).allSatisfy(r -> assertThat(r.id()).contains("-tuned-"));
        assertThat(OpenbSimulation.arrivals(list, 8000, 1.3, 42)).as("the seed fixes the draws").isEqualTo(arrivals);
        assertThat(OpenbSimulation.arrivals(list, 8000, 1.3, 43)).as("another seed, another order").isNotEqualTo(arrivals);
        assertThat(arrived(OpenbSimulation.arrivals(list, 1000, 1.3, 42))).as("a list above the load is cut down")
                .isLessThanOrEqualTo(1300);
    }

    @Test
    void aRunShufflesTheNodesAsTheAuthorsNameThem() {
        List<NodeInventory> nodes = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) {
            nodes.add(NodeInventory.uniform(String.format("n%02d", 19 - i), 1, "g", 16_384, 80));
        }
        OpenbSimulation.Run run = OpenbSimulation.prepare(List.of(req("a", 500, 1)), nodes, 1.3, 42);
        assertThat(run.nodes()).containsExactlyInAnyOrderElementsOf(nodes).isNotEqualTo(nodes);
        assertThat(OpenbSimulation.prepare(List.of(req("a", 500, 1)), nodes.reversed(), 1.3, 42).nodes())
                .as("from the names, whatever the list's order").isEqualTo(run.nodes());
    }

    @Test
    void theFigureIsTheAllocationWhere130PercentHasArrived() {
        List<NodeInventory> oneGpu = List.of(NodeInventory.uniform("n", 1, "g", 16_384, 80).withHost(8_000, 8_192));
        List<InstanceRequest> arrivals = List.of(req("a", 600, 1), req("b", 600, 1), req("c", 100, 1),
                InstanceRequest.cpuOnly("d", "d", 1_000, 1_024), req("e", 4, 1));
        OpenbSimulation.Allocation a = OpenbSimulation.allocate(new BestFitPlacement(), oneGpu, arrivals, 1.3);
        // b does not fit (120% arrived); c, d and e arrive at 130%, 130% and 130.4%, when 70%, 70% and 70.4% are
        // allocated: the figure is their mean
        assertThat(a.percent()).isCloseTo(70.13, within(1e-9));
        assertThat(a.finalPercent()).isCloseTo(70.4, within(1e-9));
        assertThat(a.unplacedGpuPods()).isEqualTo(1);
        assertThat(a.unplacedCpuPods()).isZero();
        // a load never reached: the allocation at the end
        assertThat(OpenbSimulation.allocate(new BestFitPlacement(), oneGpu, arrivals.subList(0, 1), 1.3).percent())
                .isCloseTo(60.0, within(1e-9));
        assertThat(OpenbSimulation.round(0.125, 2).doubleValue()).as("halves to even, as Python's round").isEqualTo(0.12);
        assertThat(OpenbSimulation.round(129.5, 0).intValue()).isEqualTo(130);
        assertThat(OpenbSimulation.round(130.5, 0).intValue()).isEqualTo(130);
    }

    @Test
    void theBenchReadsAUsersListsAndPrintsOneLinePerList() throws Exception {
        Path nodes = dir.resolve("nodes.csv");
        Files.writeString(nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,2,T4\nn1,8000,32768,1,P100\n");
        Path pods = dir.resolve("mine.csv");
        StringBuilder rows = new StringBuilder("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n");
        for (int i = 0; i < 12; i++) {
            rows.append("p").append(i).append(",2000,4096,").append(i % 4 == 0 ? "0,0" : "1," + (200 + 100 * (i % 5)))
                    .append(i % 6 == 1 ? ",T4" : ",").append('\n');
        }
        Files.writeString(pods, rows);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        OpenbBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8),
                new OpenbBench.Options(List.of(pods), nodes, false, 2));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).containsPattern("BENCH openb trace=mine.csv pods=9 ");
        assertThat(out).containsPattern("BENCH openb-fgd list=mine.csv alloc_dilu=\\d+\\.\\d\\d alloc_fgd=\\d+\\.\\d\\d "
                + "alloc_bestfit=\\d+\\.\\d\\d alloc_fgd_exact=\\d+\\.\\d\\d alloc_bestfit_gpu=\\d+\\.\\d\\d dilu_minus_fgd=-?\\d+\\.\\d\\d cpu=modelled seeds=2 ");
        bytes.reset();
        OpenbBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), new OpenbBench.Options(List.of(pods), nodes, true, 1));
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains(" cpu=no seeds=1 ");
    }
}
