package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SelfSignedCert;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfig;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The webhook as deployed, its own process serving HTTPS, registered on a real kube-apiserver from
 * {@code manifests/webhook/webhooks.yaml} (pointed at it by URL, with its certificate as caBundle): Dilu pods
 * come back mutated, bad ones are refused with their reasons, and pods outside the selector are created while
 * the webhook is down.
 */
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class WebhookIT {

    static final String NS = "fns";
    static final String PLAIN = "plain";
    static final Path LOGS = Path.of("target", "it-logs");
    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess webhook;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        Files.createDirectories(LOGS);
        api = RealApiServer.start();
        client = api.client();
        api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));

        for (String ns : List.of(NS, PLAIN)) {
            api.createNamespace(ns, ns.equals(NS) ? Map.of("dilu.io/webhook", "enabled") : Map.of());
        }
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName("gpu-node").withAnnotations(Map.of(
                DiluNames.GPU_INVENTORY, InventoryAnnotation.write(List.of(new GpuDevice("GPU-0", 0, "A100-40GB", 40_960, 108)))))
                .endMetadata().build()).create();
        client.genericKubernetesResources("dilu.io/v1alpha1", "GpuFunctionProfile").inNamespace(NS)
                .resource(new GenericKubernetesResourceBuilder().withApiVersion("dilu.io/v1alpha1").withKind("GpuFunctionProfile")
                        .withNewMetadata().withName("bert").endMetadata()
                        .addToAdditionalProperties("spec", Map.of("function", "bert", "smRequest", 25, "smLimit", 45,
                                "memoryMiB", 6144, "batchSize", 8, "priority", "slo")).build()).create();
        webhook = LocalControlPlane.startWebhook(client, kubeconfig, tmp, LOGS.resolve("webhook.log"));
        // The webhook's watches see the node before the tests ask about the largest GPU.
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
                .until(() -> refusal(gpuPod("probe", 30, 50_000, UnaryOperator.identity())).contains("1..40960"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (webhook != null) {
            webhook.close();
        }
        if (api != null) {
            api.close();
        }
    }

    static Pod gpuPod(String name, int sm, long memory, UnaryOperator<PodBuilder> edit) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memory)));
        return edit.apply(new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).endMetadata()
                .withNewSpec().withAutomountServiceAccountToken(false).addNewContainer().withName("server")
                .withImage("registry.local/fn:1").withNewResources().withLimits(share).withRequests(share).endResources()
                .endContainer().endSpec()).build();
    }

    static Pod create(Pod pod) {
        return client.pods().inNamespace(pod.getMetadata().getNamespace()).resource(pod).create();
    }

    static String refusal(Pod pod) {
        try {
            create(pod);
            client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).delete();
            return "created";
        } catch (KubernetesClientException e) {
            return e.getMessage();
        }
    }

    @Test
    void aDiluPodComesBackMutatedAsSpecified() {
        Pod created = create(gpuPod("resnet-1", 30, 2048, b -> b.editMetadata()
                .withLabels(Map.of("serving.knative.dev/service", "resnet")).endMetadata()));
        assertThat(created.getSpec().getSchedulerName()).isEqualTo("dilu-scheduler");
        var c = created.getSpec().getContainers().getFirst();
        Map<String, EnvVar> env = new HashMap<>();
        c.getEnv().forEach(e -> env.put(e.getName(), e));
        assertThat(env.get("LD_PRELOAD").getValue()).isEqualTo("/opt/dilu/lib/libdilu-hook.so");
        assertThat(env.get("DILU_POD_UID").getValueFrom().getFieldRef().getFieldPath()).isEqualTo("metadata.uid");
        assertThat(c.getVolumeMounts()).anySatisfy(m -> {
            assertThat(m.getMountPath()).isEqualTo("/opt/dilu/lib");
            assertThat(m.getReadOnly()).isTrue();
        });
        assertThat(created.getSpec().getVolumes()).anySatisfy(v -> assertThat(v.getHostPath().getPath()).isEqualTo("/opt/dilu/lib"));
        assertThat(created.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "resnet");
    }

    @Test
    void aPodNamingAProfileGetsItsQuotas() {
        // The webhook sees a profile through its watch: a moment after it was created.
        Pod created = await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> create(new PodBuilder().withNewMetadata().withName("bert-1").withNamespace(NS)
                .withAnnotations(Map.of("dilu.io/profile", "bert")).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewContainer().withName("c").withImage("bert").endContainer()
                .endSpec().build()), p -> p != null);
        var limits = created.getSpec().getContainers().getFirst().getResources().getLimits();
        assertThat(limits.get(DiluNames.GPU_SM)).hasToString("25");
        assertThat(limits.get(DiluNames.GPU_MEMORY)).hasToString("6144");
        assertThat(created.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "45")
                .containsEntry(DiluNames.BATCH_SIZE, "8").containsEntry(DiluNames.PRIORITY, "slo");
    }

    @Test
    void eachBadPodIsRefusedWithItsReason() {
        assertThat(refusal(gpuPod("too-much-sm", 101, 1024, UnaryOperator.identity())))
                .contains("dilu.io/gpu-sm]=101 is not allowed: must be an integer percent in 1..100");
        assertThat(refusal(gpuPod("too-much-memory", 30, 50_000, UnaryOperator.identity())))
                .contains("dilu.io/gpu-memory]=50000 is not allowed: must be an integer MiB in 1..40960");
        assertThat(refusal(gpuPod("low-limit", 30, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of(DiluNames.SM_LIMIT, "20")).endMetadata())))
                .contains("dilu.io/sm-limit=20 is not allowed: must be an integer percent in 30..100");
        assertThat(refusal(gpuPod("zero-batch", 30, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of(DiluNames.BATCH_SIZE, "0")).endMetadata())))
                .contains("dilu.io/batch-size=0 is not allowed: must be an integer of at least 1");
        assertThat(refusal(gpuPod("bad-priority", 30, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of(DiluNames.PRIORITY, "urgent")).endMetadata())))
                .contains("dilu.io/priority=urgent is not allowed: must be one of slo, best-effort");
        assertThat(refusal(gpuPod("both", 30, 1024, b -> b.editSpec().editFirstContainer().editResources()
                .addToLimits("nvidia.com/gpu", new Quantity("1")).addToRequests("nvidia.com/gpu", new Quantity("1"))
                .endResources().endContainer().endSpec()))).contains("[nvidia.com/gpu]=1 is not allowed");
        assertThat(refusal(gpuPod("privileged", 30, 1024, b -> b.editSpec().editFirstContainer().withNewSecurityContext()
                .withPrivileged(true).endSecurityContext().endContainer().endSpec())))
                .contains("securityContext.privileged=true is not allowed");
        assertThat(refusal(gpuPod("no-profile", 30, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of("dilu.io/profile", "missing")).endMetadata())))
                .contains("dilu.io/profile]=missing is not allowed: must be the name of a GpuFunctionProfile in namespace fns");
        assertThat(client.pods().inNamespace(NS).list().getItems()).extracting(p -> p.getMetadata().getName())
                .doesNotContain("too-much-sm", "too-much-memory", "low-limit", "zero-batch", "bad-priority", "both",
                        "privileged", "no-profile");
    }

    @Test
    @org.junit.jupiter.api.Order(Integer.MAX_VALUE) // stops the webhook: last
    void podsOutsideTheSelectorAreCreatedWhileTheWebhookIsDown() throws Exception {
        webhook.stop(Duration.ofSeconds(10));
        Pod plain = new PodBuilder().withNewMetadata().withName("web").withNamespace(PLAIN).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewContainer().withName("c").withImage("nginx").endContainer()
                .endSpec().build();
        assertThat(create(plain).getMetadata().getUid()).isNotBlank();
        // A GPU pod where the webhook applies is not let through unchecked.
        assertThatThrownBy(() -> create(gpuPod("while-down", 30, 1024, UnaryOperator.identity())))
                .isInstanceOf(KubernetesClientException.class).hasMessageContaining("failed calling webhook");
    }
}
