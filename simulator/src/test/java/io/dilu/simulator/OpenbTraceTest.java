package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.FragmentationGradientPlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import io.dilu.core.placement.Slot;
import io.dilu.core.placement.NodeInventory;
import java.io.StringReader;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpenbTraceTest {

    static final String NODES = """
            sn,cpu_milli,memory_mib,gpu,model
            n0,64000,262144,2,V100M32
            n1,96000,786432,8,G2
            n2,32000,131072,0,T4
            """;

    static final String PODS = """
            name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
            late,1000,1024,1,250,,LS,Running,50,90,50
            cpu-only,1000,1024,0,0,,LS,Running,1,2,1
            whole,1000,1024,2,1000,,LS,Running,10,20,10
            """;

    @Test
    void readsNodesWithTheirModelsMemoryAndPodsInCreationOrder() throws Exception {
        List<NodeInventory> nodes = OpenbTrace.readNodes(new StringReader(NODES), "nodes.csv");
        assertThat(nodes).extracting(n -> n.gpus().size()).containsExactly(2, 8, 0);
        assertThat(nodes.get(0).gpus().getFirst().memoryMib()).isEqualTo(32_768);
        List<OpenbTrace.Pod> pods = OpenbTrace.readPods(new StringReader(PODS), "pods.csv");
        assertThat(pods).extracting(OpenbTrace.Pod::name).containsExactly("whole", "late");
        InstanceRequest quarter = OpenbTrace.request(pods.get(1), 16_384);
        assertThat(quarter.requestMilli()).isEqualTo(250);
        assertThat(quarter.limitMilli()).isEqualTo(250);
        assertThat(quarter.memoryMib()).isEqualTo(4096);
        assertThat(OpenbTrace.request(pods.get(0), 16_384).gpus()).isEqualTo(2);
    }

    @Test
    void aGpuSpecKeepsAPodOnItsModelsAndAListWithoutTimesIsReadInFileOrder() throws Exception {
        List<NodeInventory> nodes = OpenbTrace.readNodes(new StringReader(NODES), "nodes.csv");
        String untimed = """
                name,num_gpu,gpu_milli,gpu_spec
                second,1,500,
                first,1,500,V100M32|T4
                """;
        List<OpenbTrace.Pod> pods = OpenbTrace.readPods(new StringReader(untimed), "multigpu.csv");
        assertThat(pods).extracting(OpenbTrace.Pod::name).containsExactly("second", "first");
        assertThat(pods.get(1).gpuSpec()).containsExactlyInAnyOrder("V100M32", "T4");
        // A half-GPU pod sits on a G2 of n1: best fit would put the next one beside it, but its spec says V100M32 or T4.
        InstanceRequest free = OpenbTrace.request(pods.get(0), 16_384);
        InstanceRequest pinned = OpenbTrace.request(pods.get(1), 16_384);
        InstanceRequest nowhere = new InstanceRequest("p", "p", 1, 500, 500, 1024, false, java.util.Set.of("A100"));
        for (PlacementPolicy policy : List.of(new ComplementaryPlacement(), new BestFitPlacement(),
                new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(List.of(free), 1)))) {
            ClusterState state = new ClusterState(nodes);
            state.apply(free.id(), free.function(), new PlacementDecision.Placed("n1",
                    List.of(new Slot(nodes.get(1).gpus().getFirst().uuid(), 500, 500, free.memoryMib()))));
            PlacementDecision.Placed second = (PlacementDecision.Placed) policy.decide(state, pinned);
            assertThat(second.node()).as(policy.name()).isEqualTo("n0");
            assertThat(policy.decide(state, nowhere)).as(policy.name()).isInstanceOf(PlacementDecision.Infeasible.class);
        }
        assertThatThrownBy(() -> OpenbTrace.readPods(new StringReader(untimed.replace("V100M32|T4", "G2|")), "multigpu.csv"))
                .hasMessageStartingWith("multigpu.csv:3: column gpu_spec=G2| is not a |-separated list of GPU models");
    }

    @Test
    void aMalformedRowIsNamedByLineAndColumn() {
        String bad = PODS.replace("late,1000,1024,1,250", "late,1000,1024,1,2500");
        assertThatThrownBy(() -> OpenbTrace.readPods(new StringReader(bad), "pods.csv"))
                .hasMessage("pods.csv:2: column gpu_milli=2500 is not in 0..1000");
        assertThatThrownBy(() -> OpenbTrace.readNodes(new StringReader("sn,gpu\nn0,2\n"), "nodes.csv"))
                .hasMessage("nodes.csv:1: no column model in the header");
        assertThatThrownBy(() -> OpenbTrace.readNodes(new StringReader(NODES.replace("n0,64000,262144,2", "n0,64000,262144,two")), "nodes.csv"))
                .hasMessage("nodes.csv:2: column gpu=two is not an integer");
    }
}
