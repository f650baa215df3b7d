package io.dilu.extender.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.ExtenderResource;
import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderBindingArgs;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A burst's replicas through the extender on a real kube-apiserver, as the demo's bert-large scales out (SM request
 * 20%, limit 40%): two of its pods share a GPU, Σ limit 80%; a third there would pass Σ request Ω and Σ limit γ but
 * hold 120% of the GPU in its own function's limits, so it goes to the node's other GPU. A pod of another namespace
 * that names its function the same is not taken for a replica.
 */
class ReplicaLimitsIT {

    static final String NODE = "r0";
    static final List<String> NODES = List.of(NODE);
    static ExtenderOnApiServer cluster;
    static KubernetesClient client;
    static ExtenderResource extender;

    @BeforeAll
    static void start() {
        cluster = new ExtenderOnApiServer(List.of("fns", "other"), Map.of(NODE, List.of(
                new GpuDevice("GPU-r0-0", 0, "A100-40GB", 40_960, 108), new GpuDevice("GPU-r0-1", 1, "A100-40GB", 40_960, 108))));
        client = cluster.client;
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        extender = cluster.extender(InstantSource.system(), metrics, cluster.events(InstantSource.system(), metrics));
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aBurstsThirdReplicaDoesNotGoWhereItsFunctionsLimitsWouldPassTheGpu() {
        String first = placed("fns", "bert-1");
        assertThat(placed("fns", "bert-2")).as("Σ limit 80%: beside the first").isEqualTo(first);
        String third = placed("fns", "bert-3");
        assertThat(third).as("Σ request 60% ≤ Ω and Σ limit 120% ≤ γ there, but 120% of one GPU in bert's own limits")
                .isNotEqualTo(first);
        assertThat(placed("other", "bert-1")).as("another namespace's bert is not bert's replica: best fit, the fuller GPU")
                .isEqualTo(first);
    }

    /** Creates a pod of function {@code bert} in {@code namespace}, filters and binds it, and returns its GPU. */
    private static String placed(String namespace, String name) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity("20"), DiluNames.GPU_MEMORY, new Quantity("4096"));
        Pod pod = client.pods().inNamespace(namespace).resource(new PodBuilder().withNewMetadata().withName(name)
                .withAnnotations(Map.of(DiluNames.FUNCTION, "bert", DiluNames.SM_LIMIT, "40")).endMetadata()
                .withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME).withAutomountServiceAccountToken(false)
                .addNewContainer().withName("server").withImage("registry.local/bert:1").withNewResources()
                .withRequests(share).withLimits(share).endResources().endContainer().endSpec().build()).create();
        assertThat(extender.filter(new ExtenderArgs(pod, null, NODES)).nodeNames()).containsExactly(NODE);
        assertThat(extender.bind(new ExtenderBindingArgs(name, namespace, pod.getMetadata().getUid(), NODE)).error()).isNull();
        await().atMost(Duration.ofSeconds(10)).until(() -> client.pods().inNamespace(namespace).withName(name).get()
                .getMetadata().getAnnotations().containsKey(DiluNames.ASSIGNED_GPUS));
        AssignedGpus assigned = AssignedGpus.parse(client.pods().inNamespace(namespace).withName(name).get().getMetadata()
                .getAnnotations().get(DiluNames.ASSIGNED_GPUS));
        assertThat(assigned.uuids()).hasSize(1);
        return assigned.uuids().get(0);
    }
}
