package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.GpuProductLabel;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.NodeSelectorRequirement;
import io.fabric8.kubernetes.api.model.NodeSelectorRequirementBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU pods that choose a GPU model the Kubernetes way, by required node affinity on the {@code nvidia.com/gpu.product}
 * label NVIDIA's GPU feature discovery puts on nodes, behind a real kube-scheduler and API server with the extender as
 * its own process: nodes of two models (A100 and V100, labelled as GFD labels them, inventories as the node agent
 * writes them from NVML). Each pod lands on its model only, even where a GPU of the other model would be the better fit;
 * among the nodes of its model Dilu's score still chooses (best fit, replicas of a function spread over active GPUs);
 * a pod its model has no room for stays Pending with the extender's reason, which names only the nodes of its model
 * (so kube-scheduler applied the affinity before it asked the extender); on a node with GPUs of both models, the
 * selection chooses the GPU.
 */
class GpuProductAffinityIT {

    static final String NS = "models";
    static final String A100 = "NVIDIA A100-SXM4-40GB";
    static final String V100 = "Tesla V100-SXM2-16GB";
    static final String HOSTNAME = "kubernetes.io/hostname";
    static final Path LOGS = TestApiServer.LOGS;

    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS);
    static RealApiServer api;
    static KubernetesClient client;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        api = API.api();
        client = API.client();
    }

    static GpuDevice gpu(String node, int index, String model) {
        return A100.equals(model) ? new GpuDevice("GPU-" + node + "-" + index, index, model, 40_960, 108)
                : new GpuDevice("GPU-" + node + "-" + index, index, model, 16_384, 80);
    }

    /** A node as its agent and GFD leave it: the inventory from NVML, the product label of (one of) its models. */
    static void node(String name, String label, String... models) {
        LocalControlPlane.createGpuNode(client, name,
                IntStream.range(0, models.length).mapToObj(i -> gpu(name, i, models[i])).toList());
        client.nodes().withName(name).edit(n -> {
            n.getMetadata().setLabels(Map.of(GpuProductLabel.KEY, label, HOSTNAME, name));
            return n;
        });
    }

    static NodeSelectorRequirement expr(String key, String... values) {
        return new NodeSelectorRequirementBuilder().withKey(key).withOperator("In").withValues(values).build();
    }

    /** A GPU pod of {@code function} whose required node affinity is {@code affinity} (one term). */
    static void pod(String name, String function, int sm, int limit, long memoryMib, NodeSelectorRequirement... affinity) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        Map<String, String> annotations = new HashMap<>(Map.of(DiluNames.FUNCTION, function,
                DiluNames.SM_LIMIT, Integer.toString(limit)));
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .withAnnotations(annotations).endMetadata().withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME)
                .withAutomountServiceAccountToken(false).withNewAffinity().withNewNodeAffinity()
                .withNewRequiredDuringSchedulingIgnoredDuringExecution().addNewNodeSelectorTerm().withMatchExpressions(affinity)
                .endNodeSelectorTerm().endRequiredDuringSchedulingIgnoredDuringExecution().endNodeAffinity().endAffinity()
                .addNewContainer().withName("c0").withImage("registry.local/" + function + ":1")
                .withNewResources().withRequests(share).withLimits(share).endResources().endContainer().endSpec()
                .build()).create();
    }

    /** Waits until the pod is bound; its node and the GPU of its one container. */
    static String[] bound(String name) {
        await().atMost(Duration.ofSeconds(Long.getLong("dilu.it.bind-timeout-s", 180))).pollInterval(Duration.ofMillis(300))
                .until(() -> client.pods().inNamespace(NS).withName(name).get().getSpec().getNodeName() != null);
        Pod p = client.pods().inNamespace(NS).withName(name).get();
        String gpu = AssignedGpus.parse(p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS)).forContainer(0)
                .orElseThrow();
        return new String[] {p.getSpec().getNodeName(), gpu};
    }

    @Test
    void eachPodGetsAGpuOfTheModelItSelectsAndDilusScoreChoosesAmongThem() throws Exception {
        String a100 = GpuProductLabel.of(A100);
        String v100 = GpuProductLabel.of(V100);
        assertThat(a100).isEqualTo("NVIDIA-A100-SXM4-40GB");
        assertThat(v100).isEqualTo("Tesla-V100-SXM2-16GB");
        for (String n : List.of("a100-0", "a100-1", "a100-2")) {
            node(n, a100, A100, A100);
        }
        for (String n : List.of("v100-0", "v100-1")) {
            node(n, v100, V100, V100);
        }
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));
        int port = LocalControlPlane.freePort();
        ChildProcess extender = LocalControlPlane.startExtender(kubeconfig, port, LOGS.resolve("extender-models.log"));
        ChildProcess scheduler = LocalControlPlane.startScheduler(client, kubeconfig, port, tmp,
                LOGS.resolve("kube-scheduler-models.log"));
        try {
            // A V100 GPU at 50% / 4 GiB, and two A100 GPUs loaded unevenly (pinned to their nodes by hostname).
            pod("bert-1", "bert", 50, 50, 4_096, expr(GpuProductLabel.KEY, v100));
            String[] bert = bound("bert-1");
            assertThat(bert[0]).startsWith("v100-");
            pod("filler-a", "fill-a", 50, 50, 16_384, expr(HOSTNAME, "a100-1"));
            String fillerA = bound("filler-a")[1];
            pod("filler-b", "fill-b", 20, 20, 4_096, expr(HOSTNAME, "a100-2"));
            String fillerB = bound("filler-b")[1];

            // resnet (30%, limit 60%, 8 GiB) on an A100. Best fit, α(1 − Σreq) + β(1 − Σmem/M), lowest wins:
            //   filler-a's GPU 0.6 (1 − 0.8) + 0.4 (1 − 24576/40960) = 0.28
            //   filler-b's GPU 0.6 (1 − 0.5) + 0.4 (1 − 12288/40960) = 0.58
            //   bert's V100    0.6 (1 − 0.8) + 0.4 (1 − 12288/16384) = 0.22, the best, but of the other model;
            // active GPUs come before a new one, so a100-0 stays empty.
            pod("resnet-1", "resnet", 30, 60, 8_192, expr(GpuProductLabel.KEY, a100));
            assertThat(bound("resnet-1")).containsExactly("a100-1", fillerA);
            // Its second replica: resnet's partner fill-a has no GPU without resnet, and replicas of one function stack
            // only when no other active GPU holds them: filler-b's GPU (bert's V100, again the best fit, is a V100).
            pod("resnet-2", "resnet", 30, 60, 8_192, expr(GpuProductLabel.KEY, a100));
            assertThat(bound("resnet-2")).containsExactly("a100-2", fillerB);

            // 20 GiB fits an A100 but no V100: a V100 pod stays Pending, with the extender's reason, given for the
            // V100 nodes only — kube-scheduler's affinity filter ran first and offered the extender nothing else.
            pod("bert-big", "bert-big", 20, 40, 20_480, expr(GpuProductLabel.KEY, v100));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                Pod p = client.pods().inNamespace(NS).withName("bert-big").get();
                assertThat(p.getSpec().getNodeName()).isNull();
                PodCondition scheduled = p.getStatus().getConditions().stream()
                        .filter(c -> "PodScheduled".equals(c.getType())).findFirst().orElseThrow();
                assertThat(scheduled.getStatus()).isEqualTo("False");
                assertThat(scheduled.getMessage()).contains("0/5 nodes are available")
                        .contains("2 no node has a GPU with 20480 MiB free").contains("3 node(s) didn't match");
            });
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(refusals("bert-big")).isNotEmpty()
                    .allSatisfy(m -> assertThat(m).startsWith("no node can take the pod: no node has a GPU with 20480 MiB free")
                            .contains("(nodes v100-0, v100-1)")));

            // A node with a GPU of each model, which GFD labels as one of them (here the A100). Alone, Dilu would put
            // 30% / 8 GiB on the V100 (0.6 · 0.7 + 0.4 · 0.5 = 0.62 against 0.6 · 0.7 + 0.4 · 0.8 = 0.74 on the A100);
            // the pod selects the A100, so it gets the A100.
            node("mixed-0", a100, V100, A100);
            pod("vit-1", "vit", 30, 60, 8_192, expr(GpuProductLabel.KEY, a100), expr(HOSTNAME, "mixed-0"));
            assertThat(bound("vit-1")).containsExactly("mixed-0", "GPU-mixed-0-1");
        } finally {
            scheduler.close();
            extender.close();
        }
    }

    /** The messages of the extender's DiluRefused events on pod {@code name}. */
    static List<String> refusals(String name) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> "DiluRefused".equals(e.getReason()) && name.equals(e.getInvolvedObject().getName()))
                .map(e -> e.getMessage()).toList();
    }
}
