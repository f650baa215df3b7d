package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.KubeClients;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The webhook as deployed, its own process serving HTTPS, registered on a real kube-apiserver from
 * {@code manifests/webhook/webhooks.yaml} (pointed at it by URL, with its certificate as caBundle): Dilu pods
 * come back mutated, bad ones are refused with their reasons, the quota right comes from the namespace, an
 * UPDATE may change dilu.io/assigned-gpus only as the node agent (or the extender), and pods outside the
 * selector are created while the webhook is down.
 */
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class WebhookIT {

    /** A namespace with the quota right (dilu.io/allow-slo=true). */
    static final String NS = "fns";
    /** A namespace without it. */
    static final String TENANTS = "tenants";
    static final String NODE_AGENT = "system:serviceaccount:dilu-system:dilu-node-agent";
    static final String PLAIN = "plain";
    static final Path LOGS = TestApiServer.LOGS;
    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(PLAIN)
            .namespace(NS, Map.of("dilu.io/webhook", "enabled", "dilu.io/allow-slo", "true"))
            .namespace(TENANTS, Map.of("dilu.io/webhook", "enabled"));
    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess webhook;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        api = API.api();
        client = API.client();
        api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));

        client.nodes().resource(new NodeBuilder().withNewMetadata().withName("gpu-node").withAnnotations(Map.of(
                DiluNames.GPU_INVENTORY, InventoryAnnotation.write(List.of(new GpuDevice("GPU-0", 0, "A100-40GB", 40_960, 108)))))
                .endMetadata().build()).create();
        for (String ns : List.of(NS, TENANTS)) {
            client.genericKubernetesResources("dilu.io/v1alpha1", "GpuFunctionProfile").inNamespace(ns)
                    .resource(new GenericKubernetesResourceBuilder().withApiVersion("dilu.io/v1alpha1").withKind("GpuFunctionProfile")
                            .withNewMetadata().withName("bert").endMetadata()
                            .addToAdditionalProperties("spec", Map.of("function", "bert", "smRequest", 25, "smLimit", 45,
                                    "memoryMiB", 6144, "batchSize", 8, "priority", "slo")).build()).create();
        }
        webhook = LocalControlPlane.startWebhook(client, kubeconfig, tmp, LOGS.resolve("webhook.log"));
        // The webhook's watches see the node and the namespaces before the tests ask about the largest GPU and
        // the quota right.
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
                .until(() -> refusal(gpuPod("probe", 30, 50_000, UnaryOperator.identity())).contains("1..40960"));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> refusal(gpuPod("probe", 30, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of(DiluNames.PRIORITY, "slo")).endMetadata())).equals("created"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (webhook != null) {
            webhook.close();
        }
    }

    static Pod gpuPod(String name, int sm, long memory, UnaryOperator<PodBuilder> edit) {
        return gpuPod(NS, name, sm, memory, edit);
    }

    static Pod gpuPod(String namespace, String name, int sm, long memory, UnaryOperator<PodBuilder> edit) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memory)));
        return edit.apply(new PodBuilder().withNewMetadata().withName(name).withNamespace(namespace).endMetadata()
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
                .withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata()));
        assertThat(created.getSpec().getSchedulerName()).isEqualTo("dilu-scheduler");
        var c = created.getSpec().getContainers().getFirst();
        Map<String, EnvVar> env = new HashMap<>();
        c.getEnv().forEach(e -> env.put(e.getName(), e));
        assertThat(env.get("LD_PRELOAD").getValue()).isEqualTo("/opt/dilu/lib/libdilu-hook.so");
        assertThat(env.get("DILU_POD_UID").getValueFrom().getFieldRef().getFieldPath()).isEqualTo("metadata.uid");
        // The device plugin mounts the hook at Allocate: the pod gets no hostPath (Pod Security "baseline" refuses it).
        assertThat(created.getSpec().getVolumes()).noneSatisfy(v -> assertThat(v.getHostPath()).isNotNull());
        assertThat(c.getVolumeMounts()).noneSatisfy(m -> assertThat(m.getMountPath()).startsWith("/opt/dilu"));
        assertThat(created.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "resnet");
        // No chroot into a tree without /etc/ld.so.preload, no ptrace (issue 36): as the API server stored the patch.
        assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("SYS_CHROOT", "SYS_PTRACE");
    }

    @Test
    void withoutTheQuotaRightAServingPodIsBestEffortAndSloIsRefused() {
        Pod created = create(gpuPod(TENANTS, "resnet-2", 30, 2048, b -> b.editMetadata()
                .withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata()));
        assertThat(created.getMetadata().getAnnotations()).containsEntry(DiluNames.PRIORITY, "best-effort");
        assertThat(refusal(gpuPod(TENANTS, "greedy", 1, 1024, b -> b.editMetadata()
                .withAnnotations(Map.of(DiluNames.PRIORITY, "slo", DiluNames.SM_LIMIT, "100")).endMetadata())))
                .contains("dilu.io/priority=slo is not allowed: must be best-effort unless the namespace has the label "
                        + "dilu.io/allow-slo=true (granted by an administrator)")
                .contains("dilu.io/sm-limit=100 is not allowed: must be at most 2 (min(100, 2 × request))");
        // The profile asks for slo: refused by its name.
        assertThat(await().atMost(Duration.ofSeconds(20)).until(() -> refusal(new PodBuilder().withNewMetadata().withName("bert-2")
                .withNamespace(TENANTS).withAnnotations(Map.of("dilu.io/profile", "bert")).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewContainer().withName("c").withImage("bert").endContainer()
                .endSpec().build()), r -> !r.contains("must be the name of a GpuFunctionProfile")))
                .contains("metadata.annotations[dilu.io/profile]=bert is not allowed: must be a GpuFunctionProfile that needs "
                        + "no quota right this namespace lacks; it gives dilu.io/priority=slo");
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
    void everyWayAroundTheHookIsRefusedByItsField() {
        assertThat(refusal(gpuPod("init-share", 30, 1024, b -> b.editSpec().addNewInitContainer().withName("init")
                .withImage("x").withNewResources().withLimits(Map.of(DiluNames.GPU_SM, new Quantity("500")))
                .withRequests(Map.of(DiluNames.GPU_SM, new Quantity("500"))).endResources().endInitContainer().endSpec())))
                .contains("spec.initContainers[0](init).resources[dilu.io/gpu-sm]=500 is not allowed: must be absent");
        assertThat(refusal(gpuPod("preload", 30, 1024, b -> b.editSpec().addNewContainer().withName("app").withImage("x")
                .addToEnv(new EnvVar("LD_PRELOAD", "/tmp/x.so", null)).endContainer().endSpec())))
                .contains("spec.containers[1](app).env[LD_PRELOAD]=/tmp/x.so is not allowed: must be absent");
        assertThat(refusal(gpuPod("control", 30, 1024, b -> b.editSpec().editFirstContainer()
                .addToEnv(new EnvVar("DILU_CONTROL_DIR", "/tmp", null)).endContainer().endSpec())))
                .contains("spec.containers[0](server).env[DILU_CONTROL_DIR]=/tmp is not allowed");
        assertThat(refusal(gpuPod("env-from", 30, 1024, b -> b.editSpec().editFirstContainer().addNewEnvFrom()
                .withNewConfigMapRef().withName("settings").endConfigMapRef().endEnvFrom().endContainer().endSpec())))
                .contains("spec.containers[0](server).envFrom[0]=configMapRef settings with prefix \"\" is not allowed");
        assertThat(refusal(gpuPod("sys-admin", 30, 1024, b -> b.editSpec().editFirstContainer().withNewSecurityContext()
                .withNewCapabilities().withAdd("SYS_ADMIN").endCapabilities().endSecurityContext().endContainer().endSpec())))
                .contains("spec.containers[0](server).securityContext.capabilities.add[0]=SYS_ADMIN is not allowed");
        assertThat(refusal(gpuPod("bound", 30, 1024, b -> b.editSpec().withNodeName("gpu-node").endSpec())))
                .contains("spec.nodeName=gpu-node is not allowed: must be empty");
        assertThat(refusal(gpuPod("own-scheduler", 30, 1024, b -> b.editSpec().withSchedulerName("my-scheduler").endSpec())))
                .contains("spec.schedulerName=my-scheduler is not allowed: must be dilu-scheduler");
        // The node agent's files are out of reach of every pod in a covered namespace, GPU or not.
        assertThat(refusal(new PodBuilder().withNewMetadata().withName("snoop").withNamespace(TENANTS).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewVolume().withName("data").withNewHostPath().withPath("/var/lib/dilu/x")
                .endHostPath().endVolume().addNewContainer().withName("c").withImage("x").endContainer().endSpec().build()))
                .contains("spec.volumes[0](data).hostPath.path=/var/lib/dilu/x is not allowed: must be a path neither at nor under "
                        + "/proc, /sys, /dev/fd");
        // And by another name: the node's root through the kernel's view of pid 1 (issue 36).
        assertThat(refusal(new PodBuilder().withNewMetadata().withName("snoop-proc").withNamespace(TENANTS).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addNewVolume().withName("data").withNewHostPath()
                .withPath("/proc/1/root/var/lib/dilu").endHostPath().endVolume().addNewContainer().withName("c").withImage("x")
                .endContainer().endSpec().build())).contains("spec.volumes[0](data).hostPath.path=/proc/1/root/var/lib/dilu is not allowed");
        assertThat(refusal(gpuPod("chroot", 30, 1024, b -> b.editSpec().editFirstContainer().withNewSecurityContext()
                .withNewCapabilities().withAdd("CAP_SYS_CHROOT").endCapabilities().endSecurityContext().endContainer().endSpec())))
                .contains("spec.containers[0](server).securityContext.capabilities.add[0]=CAP_SYS_CHROOT is not allowed");
    }

    @Test
    void anUpdateMayChangeTheAssignedGpusOnlyAsTheNodeAgentAndNeverTheQuotas() throws Exception {
        create(gpuPod("upd-1", 30, 1024, UnaryOperator.identity()));
        var pod = client.pods().inNamespace(NS).withName("upd-1");
        assertThatThrownBy(() -> pod.edit(p -> {
            p.getMetadata().getAnnotations().put(DiluNames.PRIORITY, "slo");
            return p;
        })).isInstanceOf(KubernetesClientException.class).hasMessageContaining(
                "metadata.annotations[dilu.io/priority]=slo (was best-effort) is not allowed: must be unchanged");
        // The admin is no writer of dilu.io/assigned-gpus; the node agent's ServiceAccount is.
        assertThatThrownBy(() -> pod.edit(p -> {
            p.getMetadata().getAnnotations().put(DiluNames.ASSIGNED_GPUS, "GPU-0");
            return p;
        })).isInstanceOf(KubernetesClientException.class)
                .hasMessageContaining("metadata.annotations[dilu.io/assigned-gpus]=GPU-0 (was absent) is not allowed")
                // The user the demo lets write it (its extender runs with the admin's credentials).
                .hasMessageContaining("not by " + LocalControlPlane.adminUser(client));
        try (KubernetesClient agent = KubeClients.of(new ConfigBuilder(client.getConfiguration())
                .withImpersonateUsername(NODE_AGENT).withImpersonateGroups("system:masters").build())) {
            Pod edited = agent.pods().inNamespace(NS).withName("upd-1").edit(p -> {
                p.getMetadata().getAnnotations().put(DiluNames.ASSIGNED_GPUS, "GPU-0");
                return p;
            });
            assertThat(edited.getMetadata().getAnnotations()).containsEntry(DiluNames.ASSIGNED_GPUS, "GPU-0");
        }
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
