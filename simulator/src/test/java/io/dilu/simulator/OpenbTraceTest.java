package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.FragmentationGradientPlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.PlacementPolicy;
import io.dilu.core.placement.Slot;
import java.io.StringReader;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpenbTraceTest {

    static final String NODES = """
            sn,cpu_milli,memory_mib,gpu,model
            n0,64000,262144,2,V100M32
            n1,96000,786432,8,G2
            n2,32000,131072,0,
            """;

    static final String PODS = """
            name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
            late,1000,1024,1,250,,LS,Running,50,90,50
            cpu-only,4000,8192,0,0,,LS,Running,1,2,1
            whole,2000,3072,2,1000,,LS,Running,10,20,10
            """;

    static List<NodeInventory> nodes(String csv) throws Exception {
        return OpenbTrace.readNodes(new StringReader(csv), "nodes.csv");
    }

    static List<OpenbTrace.Pod> pods(String csv) throws Exception {
        return OpenbTrace.readPods(new StringReader(csv), "pods.csv");
    }

    @Test
    void readsNodesWithTheirCpuMemoryAndModelsAndEveryPodInCreationOrder() throws Exception {
        List<NodeInventory> nodes = nodes(NODES);
        assertThat(nodes).extracting(n -> n.gpus().size()).containsExactly(2, 8, 0);
        assertThat(nodes).extracting(NodeInventory::cpuMilli).containsExactly(64_000L, 96_000L, 32_000L);
        assertThat(nodes).extracting(NodeInventory::memoryMib).containsExactly(262_144L, 786_432L, 131_072L);
        assertThat(nodes.get(0).gpus().getFirst().memoryMib()).isEqualTo(32_768);
        assertThat(nodes("sn,gpu,model\nn0,1,T4\n").getFirst().cpuMilli()).as("no CPU column: not modelled")
                .isEqualTo(NodeInventory.UNLIMITED);

        List<OpenbTrace.Pod> pods = pods(PODS);
        assertThat(pods).extracting(OpenbTrace.Pod::name).containsExactly("cpu-only", "whole", "late");
        InstanceRequest quarter = OpenbTrace.request(pods.get(2), 16_384, true);
        assertThat(quarter.requestMilli()).isEqualTo(250);
        assertThat(quarter.limitMilli()).isEqualTo(250);
        assertThat(quarter.memoryMib()).isEqualTo(4096);
        assertThat(quarter.cpuMilli()).isEqualTo(1000);
        assertThat(quarter.hostMemoryMib()).isEqualTo(1024);
        assertThat(OpenbTrace.request(pods.get(2), 16_384).cpuMilli()).as("GPUs only").isZero();
        assertThat(OpenbTrace.request(pods.get(1), 16_384, true).gpus()).isEqualTo(2);
        InstanceRequest cpuOnly = OpenbTrace.request(pods.get(0), 16_384, true);
        assertThat(cpuOnly.cpuOnly()).isTrue();
        assertThat(cpuOnly.cpuMilli()).isEqualTo(4000);
        assertThat(cpuOnly.hostMemoryMib()).isEqualTo(8192);
        assertThatThrownBy(() -> OpenbTrace.request(pods.get(0), 16_384, false))
                .hasMessageContaining("asks for no GPU");
    }

    @Test
    void aGpuSpecKeepsAPodOnItsModelsAndAListWithoutTimesIsReadInFileOrder() throws Exception {
        List<NodeInventory> nodes = nodes(NODES);
        String untimed = """
                name,num_gpu,gpu_milli,gpu_spec
                second,1,500,nan
                first,1,500,V100M32|T4
                """;
        List<OpenbTrace.Pod> pods = OpenbTrace.readPods(new StringReader(untimed), "multigpu.csv");
        assertThat(pods).extracting(OpenbTrace.Pod::name).containsExactly("second", "first");
        assertThat(pods.get(0).gpuSpec()).as("nan is none").isEmpty();
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
    }

    /** Each kind of bad row, refused with its line. */
    @Test
    void everyBadRowIsRefusedWithItsLine() {
        String header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\n";
        String ok = "ok,1000,1024,1,500,,0,10\n";
        assertRefused("", "pods.csv:1: empty file, expected a header");
        assertRefused("name,num_gpu\n", "pods.csv:1: no column gpu_milli in the header");
        assertRefused("name,num_gpu,gpu_milli,num_gpu\n", "pods.csv:1: column num_gpu appears twice in the header");
        assertRefused(header + ok + ",1000,1024,1,500,,0,10\n", "pods.csv:3: column name is empty");
        assertRefused(header + ok + "p,1000,1024,one,500,,0,10\n", "pods.csv:3: column num_gpu=one is not an integer");
        assertRefused(header + ok + "p,1000,1024,1,2500,,0,10\n", "pods.csv:3: column gpu_milli=2500 is not in 0..1000");
        assertRefused(header + ok + "p,-5,1024,1,500,,0,10\n", "pods.csv:3: column cpu_milli=-5 is not in 0..1099511627776");
        assertRefused(header + ok + "p,1000,x,1,500,,0,10\n", "pods.csv:3: column memory_mib=x is not an integer");
        assertRefused(header + ok + "p,1000,1024,1,0,,0,10\n",
                "pods.csv:3: num_gpu=1 with gpu_milli=0: a pod with GPUs asks a share of each, 1..1000");
        assertRefused(header + ok + "p,1000,1024,0,300,,0,10\n", "pods.csv:3: gpu_milli=300 with num_gpu=0: a share of no GPU");
        assertRefused(header + ok + "p,1000,1024,2,500,,0,10\n",
                "pods.csv:3: num_gpu=2 with gpu_milli=500: a pod of several GPUs takes whole GPUs (gpu_milli=1000) in this format");
        assertRefused(header + ok + "p,1000,1024,1,500,,20,10\n", "pods.csv:3: column deletion_time=10 is not in 20..9223372036854775807");
        assertRefused(header + ok + "p,1000,1024,1,500\n", "pods.csv:3: the row has 5 columns, the header 8");
        assertRefused(header + ok + ok, "pods.csv:3: pod ok is listed twice");
        assertRefused(header + ok + "p,1000,1024,1,500,T4|,0,10\n",
                "pods.csv:3: column gpu_spec=T4| is not a |-separated list of GPU models (letters, digits, _ . -; at most 64 each)");
    }

    @Test
    void everyBadNodeRowIsRefusedWithItsLine() {
        assertThatThrownBy(() -> nodes("sn,gpu\nn0,2\n")).hasMessage("nodes.csv:1: no column model in the header");
        assertThatThrownBy(() -> nodes(NODES.replace("n0,64000,262144,2", "n0,64000,262144,two")))
                .hasMessage("nodes.csv:2: column gpu=two is not an integer");
        assertThatThrownBy(() -> nodes(NODES.replace("n0,64000,262144,2", "n0,64000,262144,65")))
                .hasMessage("nodes.csv:2: column gpu=65 is not in 0..64");
        assertThatThrownBy(() -> nodes(NODES.replace("n0,64000", "n0,-1")))
                .hasMessage("nodes.csv:2: column cpu_milli=-1 is not in 0..1099511627776");
        assertThatThrownBy(() -> nodes(NODES.replace("8,G2", "8,nan"))).hasMessage("nodes.csv:3: column model is empty on a node of 8 GPUs");
        assertThatThrownBy(() -> nodes(NODES.replace("n1,", "n0,"))).hasMessage("nodes.csv:3: node n0 is listed twice");
        assertThatThrownBy(() -> nodes(NODES + "n3,1000\n")).hasMessage("nodes.csv:5: the row has 2 columns, the header 5");
    }

    private static void assertRefused(String csv, String message) {
        assertThatThrownBy(() -> pods(csv)).as(message).isInstanceOf(OpenbTrace.InvalidTraceException.class).hasMessage(message);
    }
}
