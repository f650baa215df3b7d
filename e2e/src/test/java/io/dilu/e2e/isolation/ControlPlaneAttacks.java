package io.dilu.e2e.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SelfSignedCert;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvFromSourceBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.EphemeralContainer;
import io.fabric8.kubernetes.api.model.EphemeralContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Attacks a tenant can make on Dilu's control plane — through the API server (admission), by calling the webhook and
 * the scheduler extender directly, or on the autoscaler's own inputs ({@link AutoscalerAttacks}: Knative's activator's
 * websocket, the profiler) — run against the real components as their own processes on a real kube-apiserver. Each answers whether it was contained: refused with a message, answered 4xx (never 5xx), nothing
 * reserved or bound that should not be, and the component still answering. Shared by
 * {@code ControlPlaneIsolationIT} (which asserts) and {@code ControlPlaneIsolationBench} (which prints).
 */
public final class ControlPlaneAttacks implements AutoCloseable {

    /** What one attack achieved. */
    public record Outcome(String attack, boolean contained, String detail) {}

    @FunctionalInterface
    interface Attack {
        Outcome run() throws Exception;
    }

    static final String COVERED = "tenants";
    static final String NODE = "gpu-node";
    static final String DIRECT = "direct";
    static final String UNCOVERED = "uncovered";
    static final String GPU_ENV = "gpu-env";
    static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";

    private final RealApiServer api;
    private final KubernetesClient client;
    private final ChildProcess webhook;
    private final ChildProcess extender;
    private final AutoscalerAttacks autoscaler;
    private final int extenderPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final HttpClient tls;
    private final String webhookBase;
    private final ToolkitRouteAttack toolkitRoute;
    private final BookingAttacks booking;

    private ControlPlaneAttacks(RealApiServer api, ChildProcess webhook, ChildProcess extender, AutoscalerAttacks autoscaler,
            int extenderPort, String webhookBase, Path work, Path kubeconfig) throws Exception {
        this.api = api;
        this.toolkitRoute = new ToolkitRouteAttack(api, kubeconfig, work, work.resolve("logs"));
        this.client = api.client();
        this.webhook = webhook;
        this.extender = extender;
        this.autoscaler = autoscaler;
        this.extenderPort = extenderPort;
        this.booking = new BookingAttacks(api, http, extenderPort, NODE);
        this.webhookBase = webhookBase;
        // The webhook serves the certificate the harness made for it in the work directory; trust that one only.
        this.tls = HttpClient.newBuilder().sslContext(new SelfSignedCert(work.resolve("tls.crt"), work.resolve("tls.key"))
                .trustingContext()).connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** A real API server with the webhook (HTTPS, registered) and the extender running beside it. */
    public static ControlPlaneAttacks start(Path work) throws Exception {
        Path logs = Files.createDirectories(work.resolve("logs"));
        RealApiServer api = RealApiServer.start();
        KubernetesClient client = api.client();
        api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
        Path kubeconfig = api.writeKubeconfig(work.resolve("kubeconfig"));
        api.createNamespace(COVERED, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_ENABLED));
        api.createNamespace(UNCOVERED, Map.of());
        // An administrator's opt-out: pods created there directly are the extender's to place, unchecked.
        api.createNamespace(DIRECT, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_DISABLED));
        // What a tenant's envFrom can bring: NVIDIA_VISIBLE_DEVICES as a key of a ConfigMap or a Secret of its own.
        for (String ns : List.of(COVERED, UNCOVERED)) {
            client.configMaps().inNamespace(ns).resource(new ConfigMapBuilder().withNewMetadata().withName(GPU_ENV).endMetadata()
                    .addToData("MODEL", "resnet").addToData(VISIBLE_DEVICES, "all").build()).create();
        }
        client.secrets().inNamespace(COVERED).resource(new SecretBuilder().withNewMetadata().withName(GPU_ENV).endMetadata()
                .addToStringData(VISIBLE_DEVICES, "all").build()).create();
        LocalControlPlane.createGpuNode(client, NODE, List.of(new GpuDevice("GPU-iso-0", 0, "A100-40GB", 40_960, 108)));
        ChildProcess webhook = LocalControlPlane.startWebhook(client, kubeconfig, work, logs.resolve("webhook.log"));
        int port = LocalControlPlane.freePort();
        ChildProcess extender = LocalControlPlane.startExtender(kubeconfig, port, logs.resolve("extender.log"));
        String url = client.admissionRegistration().v1().validatingWebhookConfigurations().list().getItems().stream()
                .map(ValidatingWebhookConfiguration::getWebhooks).flatMap(List::stream)
                .map(w -> w.getClientConfig().getUrl()).findFirst().orElseThrow();
        String base = url.substring(0, url.indexOf('/', "https://".length()));
        AutoscalerAttacks autoscaler = AutoscalerAttacks.start(api, kubeconfig, logs);
        ControlPlaneAttacks attacks = new ControlPlaneAttacks(api, webhook, extender, autoscaler, port, base, work, kubeconfig);
        attacks.awaitWebhookSeesTheCluster();
        return attacks;
    }

    @Override
    public void close() throws Exception {
        autoscaler.close();
        extender.close();
        webhook.close();
        api.close();
    }

    /** Every attack, in a stable order. */
    public List<Outcome> runAll() {
        List<Outcome> outcomes = new ArrayList<>();
        for (Map.Entry<String, Attack> a : attacks().entrySet()) {
            try {
                outcomes.add(a.getValue().run());
            } catch (Exception | AssertionError e) {
                outcomes.add(new Outcome(a.getKey(), false, "the attack's run failed: " + e));
            }
        }
        return outcomes;
    }

    Map<String, Attack> attacks() {
        Map<String, Attack> all = new LinkedHashMap<>();
        // admission, through the API server as a tenant would
        refusedAt(all, "ld-preload-env", "env[LD_PRELOAD]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("LD_PRELOAD").withValue("/tmp/mine.so").build()).endContainer().endSpec());
        refusedAt(all, "ld-preload-value-from", "env[LD_PRELOAD]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("LD_PRELOAD").withNewValueFrom().withNewConfigMapKeyRef()
                        .withName("cfg").withKey("preload").endConfigMapKeyRef().endValueFrom().build()).endContainer().endSpec());
        refusedAt(all, "dilu-env", "env[DILU_CONTROL_DIR]", p -> p.editSpec().editFirstContainer()
                .addToEnv(new EnvVarBuilder().withName("DILU_CONTROL_DIR").withValue("/tmp/mine").build()).endContainer().endSpec());
        refusedAt(all, "env-from-without-prefix", "envFrom[0]", p -> p.editSpec().editFirstContainer()
                .addToEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef().withName("cfg").endConfigMapRef().build())
                .endContainer().endSpec());
        refusedAt(all, "init-container-gpu", "spec.initContainers[0](init).resources[dilu.io/gpu-sm]", p -> p.editSpec()
                .addToInitContainers(new ContainerBuilder().withName("init").withImage("registry.local/fn:1").withNewResources()
                        .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("500"))).endResources().build()).endSpec());
        refusedAt(all, "sys-admin", "SYS_ADMIN", p -> p.editSpec().editFirstContainer().withNewSecurityContext()
                .withCapabilities(new CapabilitiesBuilder().withAdd("SYS_ADMIN").build()).endSecurityContext().endContainer().endSpec());
        all.put("host-path-agent-dir", () -> refusal("host-path-agent-dir", "hostPath.path=/var/lib/dilu",
                new PodBuilder().withNewMetadata().withName("hostpath").withNamespace(COVERED).endMetadata().withNewSpec()
                        .addNewContainer().withName("c").withImage("registry.local/tool:1").endContainer()
                        .addNewVolume().withName("data").withNewHostPath().withPath("/var/lib/dilu/containers").endHostPath()
                        .endVolume().endSpec().build()));
        refusedAt(all, "node-name", "spec.nodeName", p -> p.editSpec().withNodeName(NODE).endSpec());
        refusedAt(all, "other-scheduler", "spec.schedulerName", p -> p.editSpec().withSchedulerName("my-scheduler").endSpec());
        refusedAt(all, "slo-without-right", "dilu.io/priority=slo", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.PRIORITY, "slo")).endMetadata());
        refusedAt(all, "limit-above-default", "dilu.io/sm-limit=100", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.SM_LIMIT, "100")).endMetadata(), 1);
        refusedAt(all, "hair-trigger-threshold", "dilu.io/klc-threshold", p -> p.editMetadata()
                .withAnnotations(Map.of(DiluNames.KLC_THRESHOLD, "1.01")).endMetadata());
        all.put("uncovered-namespace", () -> refusal("uncovered-namespace", "metadata.namespace=uncovered",
                gpuPod("elsewhere", p -> p.editMetadata().withNamespace(UNCOVERED).endMetadata(), 30)));
        gpusByAnotherDoor(all);
        privilegedNeighbours(all);
        seccomp(all);
        hostPathsAndCapabilities(all);
        all.put("priority-changed-by-update", this::priorityChangedByUpdate);
        all.put("webhook-6000-containers", this::sixThousandContainers);
        all.put("webhook-huge-quantity", () -> webhookReview("webhook-huge-quantity", gpuPodJson("1e999999999")));
        all.put("webhook-garbage-body", () -> webhookPost("webhook-garbage-body", "{\"request\": [[[[", 200));
        all.put("admission-over-plain-http", this::admissionOverPlainHttp);
        // the extender, called directly
        all.put("extender-other-interfaces", this::extenderOnLoopbackOnly);
        all.put("extender-null-body", () -> extenderPost("extender-null-body", "filter", "null", 400));
        all.put("extender-pod-without-uid", () -> extenderPost("extender-pod-without-uid", "filter",
                "{\"Pod\": {\"metadata\": {\"name\": \"x\", \"namespace\": \"" + COVERED + "\"}}, \"NodeNames\": [\"" + NODE + "\"]}",
                400));
        all.put("extender-made-up-pod", this::madeUpPod);
        all.put("extender-bind-foreign-pod", this::bindForeignPod);
        all.put("extender-huge-quantity", this::extenderHugeQuantity);
        booking.addTo(all);
        // the autoscaler's own inputs
        autoscaler.addTo(all);
        // Last: it takes the uncovered namespaces' webhook away for a while, and starts a node agent and kube-scheduler.
        all.put(ToolkitRouteAttack.NAME, toolkitRoute::run);
        return all;
    }

    /** Issue 29, cause 1: GPUs by the NVIDIA toolkit's variables, by every route and from every kind of container. */
    private void gpusByAnotherDoor(Map<String, Attack> all) {
        String sidecarEnv = "spec.containers[1](sidecar).env[" + VISIBLE_DEVICES + "]";
        refusedAt(all, "nvidia-env-sidecar", sidecarEnv, sidecar(c -> c.addToEnv(allGpus())));
        refusedAt(all, "nvidia-value-from-sidecar", sidecarEnv, sidecar(c -> c.addToEnv(new EnvVarBuilder().withName(VISIBLE_DEVICES)
                .withNewValueFrom().withNewConfigMapKeyRef().withName(GPU_ENV).withKey(VISIBLE_DEVICES).endConfigMapKeyRef()
                .endValueFrom().build())));
        refusedAt(all, "nvidia-env-from-config-map-sidecar", "spec.containers[1](sidecar).envFrom[0]=configMapRef gpu-env",
                sidecar(c -> c.addToEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef().withName(GPU_ENV).endConfigMapRef().build())));
        refusedAt(all, "nvidia-env-from-secret-sidecar", "spec.containers[1](sidecar).envFrom[0]=secretRef gpu-env",
                sidecar(c -> c.addToEnvFrom(new EnvFromSourceBuilder().withNewSecretRef().withName(GPU_ENV).endSecretRef().build())));
        refusedAt(all, "nvidia-env-init", "spec.initContainers[0](init).env[" + VISIBLE_DEVICES + "]",
                init(c -> c.addToEnv(allGpus())));
        all.put("nvidia-env-ephemeral", () -> ephemeralRefusal("nvidia-env-ephemeral",
                "spec.ephemeralContainers[0](debug).env[" + VISIBLE_DEVICES + "]",
                gpuPod("nvidia-env-ephemeral", UnaryOperator.identity(), 10), c -> c.addToEnv(allGpus())));
        refusedAt(all, "nvidia-override-gpu-container", "spec.containers[0](server).env[" + VISIBLE_DEVICES + "]", p -> p.editSpec()
                .editFirstContainer().addToEnv(new EnvVar(VISIBLE_DEVICES, "GPU-iso-0,GPU-other", null)).endContainer().endSpec());
        refusedAt(all, "nvidia-capabilities-gpu-container", "spec.containers[0](server).env[NVIDIA_DRIVER_CAPABILITIES]", p -> p
                .editSpec().editFirstContainer().addToEnv(new EnvVar("NVIDIA_DRIVER_CAPABILITIES", "all", null)).endContainer().endSpec());
        refusedAt(all, "nvidia-mig-monitor-sidecar", "spec.containers[1](sidecar).env[NVIDIA_MIG_MONITOR_DEVICES]",
                sidecar(c -> c.addToEnv(new EnvVar("NVIDIA_MIG_MONITOR_DEVICES", "all", null))));
        String ownEnv = "spec.containers[0](miner).env[" + VISIBLE_DEVICES + "]";
        all.put("nvidia-env-own-pod", () -> refusal("nvidia-env-own-pod", ownEnv,
                plainPod("nvidia-env-own-pod", COVERED, c -> c.addToEnv(allGpus()))));
        all.put("nvidia-env-from-own-pod", () -> refusal("nvidia-env-from-own-pod", "spec.containers[0](miner).envFrom[0]",
                plainPod("nvidia-env-from-own-pod", COVERED, c -> c.addToEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef()
                        .withName(GPU_ENV).endConfigMapRef().build()))));
        all.put("cuda-version-legacy-own-pod", () -> refusal("cuda-version-legacy-own-pod", "spec.containers[0](miner).env[CUDA_VERSION]",
                plainPod("cuda-version-legacy-own-pod", COVERED, c -> c.addToEnv(new EnvVar("CUDA_VERSION", "12.4.1", null)))));
        all.put("nvidia-env-uncovered", () -> refusal("nvidia-env-uncovered", ownEnv,
                plainPod("nvidia-env-uncovered", UNCOVERED, c -> c.addToEnv(allGpus()))));
        all.put("nvidia-env-from-uncovered", () -> refusal("nvidia-env-from-uncovered", "spec.containers[0](miner).envFrom[0]",
                plainPod("nvidia-env-from-uncovered", UNCOVERED, c -> c.addToEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef()
                        .withName(GPU_ENV).endConfigMapRef().build()))));
        all.put("nvidia-env-ephemeral-uncovered", () -> ephemeralRefusal("nvidia-env-ephemeral-uncovered",
                "spec.ephemeralContainers[0](debug).env[" + VISIBLE_DEVICES + "]",
                plainPod("nvidia-env-ephemeral-uncovered", UNCOVERED, UnaryOperator.identity()), c -> c.addToEnv(allGpus())));
    }

    /** Issue 29, cause 2: neighbours of the GPU container that reach its process, its mounts or the node. */
    private void privilegedNeighbours(Map<String, Attack> all) {
        refusedAt(all, "privileged-sidecar", "spec.containers[1](sidecar).securityContext.privileged=true",
                sidecar(c -> c.withNewSecurityContext().withPrivileged(true).endSecurityContext()));
        refusedAt(all, "privileged-init", "spec.initContainers[0](init).securityContext.privileged=true",
                init(c -> c.withNewSecurityContext().withPrivileged(true).endSecurityContext()));
        // Kubernetes takes a securityContext on an ephemeral container (kubectl debug --profile=sysadmin asks for
        // privileged): the webhook refuses it, naming the field.
        all.put("privileged-ephemeral", () -> ephemeralRefusal("privileged-ephemeral",
                "spec.ephemeralContainers[0](debug).securityContext.privileged=true",
                gpuPod("privileged-ephemeral", UnaryOperator.identity(), 10),
                c -> c.withNewSecurityContext().withPrivileged(true).endSecurityContext()));
        all.put("sys-admin-ephemeral", () -> ephemeralRefusal("sys-admin-ephemeral",
                "spec.ephemeralContainers[0](debug).securityContext.capabilities.add[0]=SYS_ADMIN",
                gpuPod("sys-admin-ephemeral", UnaryOperator.identity(), 10), c -> c.withNewSecurityContext()
                        .withCapabilities(new CapabilitiesBuilder().withAdd("SYS_ADMIN").build()).endSecurityContext()));
        refusedAt(all, "share-process-namespace", "spec.shareProcessNamespace=true", p -> p.editSpec().withShareProcessNamespace(true)
                .endSpec());
        refusedAt(all, "host-pid", "spec.hostPID=true", p -> p.editSpec().withHostPID(true).endSpec());
        refusedAt(all, "host-ipc", "spec.hostIPC=true", p -> p.editSpec().withHostIPC(true).endSpec());
        refusedAt(all, "host-network", "spec.hostNetwork=true", p -> p.editSpec().withHostNetwork(true).endSpec());
        refusedAt(all, "sys-ptrace-sidecar", "spec.containers[1](sidecar).securityContext.capabilities.add[0]=SYS_PTRACE",
                sidecar(c -> c.withNewSecurityContext().withCapabilities(new CapabilitiesBuilder().withAdd("SYS_PTRACE").build())
                        .endSecurityContext()));
        refusedAt(all, "dac-read-search-init", "spec.initContainers[0](init).securityContext.capabilities.add[0]=CAP_DAC_READ_SEARCH",
                init(c -> c.withNewSecurityContext().withCapabilities(new CapabilitiesBuilder().withAdd("CAP_DAC_READ_SEARCH").build())
                        .endSecurityContext()));
    }

    /** Issue 29, cause 3: user namespaces inside the container, which the runtime's default seccomp profile refuses. */
    private void seccomp(Map<String, Attack> all) {
        refusedAt(all, "seccomp-unconfined-pod", "spec.securityContext.seccompProfile.type=Unconfined", p -> p.editSpec()
                .withNewSecurityContext().withNewSeccompProfile().withType("Unconfined").endSeccompProfile().endSecurityContext()
                .endSpec());
        refusedAt(all, "seccomp-unconfined-container", "spec.containers[1](sidecar).securityContext.seccompProfile.type=Unconfined",
                sidecar(c -> c.withNewSecurityContext().withNewSeccompProfile().withType("Unconfined").endSeccompProfile()
                        .endSecurityContext()));
        refusedAt(all, "seccomp-unconfined-annotation", "metadata.annotations[" + CONTAINER_SECCOMP + "server]=unconfined",
                p -> p.editMetadata().withAnnotations(Map.of(CONTAINER_SECCOMP + "server", "unconfined")).endMetadata());
        all.put("seccomp-annotation-by-update", this::seccompAnnotationByUpdate);
        all.put("seccomp-runtime-default-given", this::runtimeDefaultGiven);
    }

    /**
     * Issue 36, items 4 and 5: the node agent's files by another name (the kernel's view of a process's root, a step
     * back past a link), the kernel's views themselves, and chroot or ptrace given back to a container of a Dilu pod.
     */
    private void hostPathsAndCapabilities(Map<String, Attack> all) {
        hostPath(all, "host-path-proc-root-agent-dir", "/proc/1/root/var/lib/dilu", false);
        hostPath(all, "host-path-proc-root-control-blocks", "/proc/1/root/var/lib/dilu/containers", true);
        hostPath(all, "host-path-proc-self-root-hook", "/proc/self/root/opt/dilu", true);
        hostPath(all, "host-path-proc-cwd", "/proc/1/cwd", true);
        hostPath(all, "host-path-proc-itself", "/proc", true);
        hostPath(all, "host-path-sys-gpu-registers", "/sys/bus/pci/devices", true);
        // Issue 45: the rest of the node a hostPath reached in a covered namespace (Pod Security's business before).
        hostPath(all, "host-path-kubelet-pod-tokens", "/var/lib/kubelet/pods", false);
        hostPath(all, "host-path-kubelet-pki", "/var/lib/kubelet/pki", false);
        hostPath(all, "host-path-containerd-socket", "/run/containerd/containerd.sock", true);
        hostPath(all, "host-path-driver-libraries", "/usr/lib/x86_64-linux-gnu", true);
        hostPath(all, "host-path-dev-stdin", "/dev/stdin", true);
        hostPath(all, "host-path-dev-core", "/dev/core", false);
        // The API server's own validation refuses '..' in a hostPath before the webhook is asked; either refusal names it.
        hostPath(all, "host-path-back-step-past-a-link", "/var/run/../var/lib/dilu", false);
        String add = "securityContext.capabilities.add[0]=";
        refusedAt(all, "chroot-added-back", "spec.containers[0](server)." + add + "SYS_CHROOT", p -> p.editSpec().editFirstContainer()
                .withNewSecurityContext().withCapabilities(new CapabilitiesBuilder().withAdd("SYS_CHROOT").build())
                .endSecurityContext().endContainer().endSpec());
        refusedAt(all, "chroot-added-back-init", "spec.initContainers[0](init)." + add + "CAP_SYS_CHROOT",
                init(c -> c.withNewSecurityContext().withCapabilities(new CapabilitiesBuilder().withAdd("CAP_SYS_CHROOT").build())
                        .endSecurityContext()));
        refusedAt(all, "chroot-as-all", "spec.containers[1](sidecar)." + add + "ALL", sidecar(c -> c.withNewSecurityContext()
                .withCapabilities(new CapabilitiesBuilder().withAdd("ALL").build()).endSecurityContext()));
        refusedAt(all, "ptrace-gpu-container", "spec.containers[0](server)." + add + "SYS_PTRACE", p -> p.editSpec()
                .editFirstContainer().withNewSecurityContext().withCapabilities(new CapabilitiesBuilder().withAdd("SYS_PTRACE")
                        .build()).endSecurityContext().endContainer().endSpec());
        all.put("chroot-ephemeral", () -> ephemeralRefusal("chroot-ephemeral",
                "spec.ephemeralContainers[0](debug)." + add + "SYS_CHROOT",
                gpuPod("chroot-ephemeral", UnaryOperator.identity(), 10), c -> c.withNewSecurityContext()
                        .withCapabilities(new CapabilitiesBuilder().withAdd("SYS_CHROOT").build()).endSecurityContext()));
        all.put("chroot-and-ptrace-dropped", () -> chrootAndPtraceDropped("chroot-and-ptrace-dropped", List.of()));
        // Issue 45, escape 1: spellings a lenient reader takes for SYS_CHROOT, which containerd turns into "CAP_" plus
        // their upper case and so drops nothing. The bare name must come back beside them.
        all.put("chroot-dropped-by-other-spellings", () -> chrootAndPtraceDropped("chroot-dropped-by-other-spellings",
                List.of("CAP_SYS_CHROOT", "CHROOT", " SYS_CHROOT", "CAP_ALL", "SYS_PTRACE")));
        // Each alone, on the app, sidecar and init containers: a reader lenient to any one of them is caught by it.
        Map.of("chroot-dropped-as-cap-sys-chroot", "CAP_SYS_CHROOT", "chroot-dropped-as-chroot", "CHROOT",
                "chroot-dropped-with-a-leading-space", " SYS_CHROOT", "chroot-dropped-as-cap-all", "CAP_ALL")
                .entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> all.put(e.getKey(),
                        () -> chrootAndPtraceDropped(e.getKey(), List.of(e.getValue()))));
    }

    private void hostPath(Map<String, Attack> all, String name, String path, boolean gpu) {
        UnaryOperator<PodBuilder> volume = p -> p.editSpec().addNewVolume().withName("host").withNewHostPath().withPath(path)
                .endHostPath().endVolume().endSpec();
        all.put(name, () -> refusal(name, "hostPath.path", gpu ? gpuPod(name, volume, 10)
                : volume.apply(new PodBuilder(plainPod(name, COVERED, UnaryOperator.identity()))).build()));
    }

    /**
     * A GPU pod with a sidecar and an init container comes back with SYS_CHROOT and SYS_PTRACE dropped from each (the
     * runtimes' default set has SYS_CHROOT: a root process would chroot into a tree without /etc/ld.so.preload).
     */
    private Outcome chrootAndPtraceDropped(String name, List<String> asked) {
        UnaryOperator<ContainerBuilder> asking = c -> asked.isEmpty() ? c : c.withNewSecurityContext()
                .withCapabilities(new CapabilitiesBuilder().withDrop(asked).build()).endSecurityContext();
        UnaryOperator<PodBuilder> server = p -> p.editSpec()
                .withContainers(asking.apply(new ContainerBuilder(p.buildSpec().getContainers().getFirst())).build()).endSpec();
        Pod created = client.pods().inNamespace(COVERED).resource(gpuPod(name, p -> init(asking).apply(sidecar(asking)
                .apply(server.apply(p))), 10)).create();
        try {
            List<String> missing = new ArrayList<>();
            List<io.fabric8.kubernetes.api.model.Container> all = new ArrayList<>(created.getSpec().getContainers());
            all.addAll(created.getSpec().getInitContainers());
            for (var c : all) {
                List<String> drop = c.getSecurityContext() == null || c.getSecurityContext().getCapabilities() == null
                        || c.getSecurityContext().getCapabilities().getDrop() == null ? List.of()
                        : c.getSecurityContext().getCapabilities().getDrop();
                if (!drop.containsAll(List.of("SYS_CHROOT", "SYS_PTRACE"))) {
                    missing.add(c.getName() + " drops " + drop);
                }
            }
            return new Outcome(name, missing.isEmpty() && all.size() == 3, missing.isEmpty()
                    ? "each of " + all.size() + " containers drops SYS_CHROOT and SYS_PTRACE as created" : String.join("; ", missing));
        } finally {
            delete(created);
        }
    }

    static final String CONTAINER_SECCOMP = "container.seccomp.security.alpha.kubernetes.io/";

    private static EnvVar allGpus() {
        return new EnvVar(VISIBLE_DEVICES, "all", null);
    }

    private static ContainerBuilder neighbour(String name) {
        return new ContainerBuilder().withName(name).withImage("registry.local/tool:1");
    }

    private static UnaryOperator<PodBuilder> sidecar(UnaryOperator<ContainerBuilder> edit) {
        return p -> p.editSpec().addToContainers(edit.apply(neighbour("sidecar")).build()).endSpec();
    }

    private static UnaryOperator<PodBuilder> init(UnaryOperator<ContainerBuilder> edit) {
        return p -> p.editSpec().addToInitContainers(edit.apply(neighbour("init")).build()).endSpec();
    }

    /** A pod without a GPU share, one container named miner. */
    private static Pod plainPod(String name, String namespace, UnaryOperator<ContainerBuilder> edit) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(namespace).endMetadata().withNewSpec()
                .withAutomountServiceAccountToken(false).addToContainers(edit.apply(neighbour("miner")).build()).endSpec().build();
    }

    /**
     * Creates {@code pod}, then adds an ephemeral container to it as {@code kubectl debug} does, through
     * pods/ephemeralcontainers: contained when the API server refuses that with a message naming {@code field}. The
     * subresource takes the Pod with its ephemeral containers added (from Kubernetes 1.22; an EphemeralContainers
     * object before).
     */
    private Outcome ephemeralRefusal(String name, String field, Pod pod, UnaryOperator<EphemeralContainerBuilder> edit) throws Exception {
        String ns = pod.getMetadata().getNamespace();
        Pod created = client.pods().inNamespace(ns).resource(pod).create();
        try {
            EphemeralContainer debug = edit.apply(new EphemeralContainerBuilder().withName("debug").withImage("registry.local/tool:1"))
                    .build();
            Pod body = new PodBuilder(created).editSpec().addToEphemeralContainers(debug).endSpec().build();
            var http = client.getHttpClient();
            var r = http.sendAsync(http.newHttpRequestBuilder().uri(client.getMasterUrl().toString().replaceAll("/$", "")
                    + "/api/v1/namespaces/" + ns + "/pods/" + created.getMetadata().getName() + "/ephemeralcontainers")
                    .put("application/json", Serialization.asJson(body)).build(), String.class).get(30, TimeUnit.SECONDS);
            if (r.code() < 300) {
                return new Outcome(name, false, "the ephemeral container was added: " + r.code());
            }
            String message = String.valueOf(Serialization.unmarshal(r.body(), Map.class).get("message"));
            boolean named = message.contains(field);
            return new Outcome(name, r.code() >= 400 && r.code() < 500 && named, r.code() + ": " + shorten(message));
        } finally {
            delete(created);
        }
    }

    /** A GPU pod that names no seccomp profile comes back with the runtime's default. */
    private Outcome runtimeDefaultGiven() {
        Pod created = client.pods().inNamespace(COVERED).resource(gpuPod("seccomp-default", UnaryOperator.identity(), 10)).create();
        try {
            var context = created.getSpec().getSecurityContext();
            String type = context == null || context.getSeccompProfile() == null ? "unset" : context.getSeccompProfile().getType();
            return new Outcome("seccomp-runtime-default-given", "RuntimeDefault".equals(type), "spec.securityContext.seccompProfile.type="
                    + type + " as created");
        } finally {
            delete(created);
        }
    }

    /** The kubelet reads a container's seccomp annotation at each start: one added later must be refused. */
    private Outcome seccompAnnotationByUpdate() {
        Pod pod = client.pods().inNamespace(COVERED).resource(gpuPod("seccomp-update", UnaryOperator.identity(), 10)).create();
        String key = CONTAINER_SECCOMP + "server";
        try {
            client.pods().inNamespace(COVERED).withName(pod.getMetadata().getName()).edit(p -> {
                p.getMetadata().getAnnotations().put(key, "unconfined");
                return p;
            });
            return new Outcome("seccomp-annotation-by-update", false, "the UPDATE was admitted");
        } catch (KubernetesClientException e) {
            String message = String.valueOf(e.getStatus() == null ? e.getMessage() : e.getStatus().getMessage());
            return new Outcome("seccomp-annotation-by-update", e.getCode() >= 400 && e.getCode() < 500
                    && message.contains("metadata.annotations[" + key + "]"), e.getCode() + ": " + shorten(message));
        } finally {
            delete(pod);
        }
    }

    // ---- admission ----

    private static Pod gpuPod(String name, UnaryOperator<PodBuilder> edit, int sm) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity("1024"));
        return edit.apply(new PodBuilder().withNewMetadata().withName(name).withNamespace(COVERED).endMetadata()
                .withNewSpec().withAutomountServiceAccountToken(false).addNewContainer().withName("server")
                .withImage("registry.local/fn:1").withNewResources().withLimits(share).withRequests(share).endResources()
                .endContainer().endSpec()).build();
    }

    private void refusedAt(Map<String, Attack> all, String name, String field, UnaryOperator<PodBuilder> edit) {
        refusedAt(all, name, field, edit, 30);
    }

    private void refusedAt(Map<String, Attack> all, String name, String field, UnaryOperator<PodBuilder> edit, int sm) {
        all.put(name, () -> refusal(name, field, gpuPod(name, edit, sm)));
    }

    /** Contained when the API server refuses the pod with the webhook's message naming the field (a 4xx). */
    private Outcome refusal(String name, String field, Pod pod) {
        String ns = pod.getMetadata().getNamespace();
        try {
            client.pods().inNamespace(ns).resource(pod).create();
            client.pods().inNamespace(ns).withName(pod.getMetadata().getName()).delete();
            return new Outcome(name, false, "admitted");
        } catch (KubernetesClientException e) {
            String message = String.valueOf(e.getStatus() == null ? e.getMessage() : e.getStatus().getMessage());
            boolean contained = e.getCode() >= 400 && e.getCode() < 500 && message.contains(field);
            return new Outcome(name, contained, e.getCode() + ": " + shorten(message));
        }
    }

    private Outcome priorityChangedByUpdate() {
        Pod pod = client.pods().inNamespace(COVERED).resource(gpuPod("update-me", UnaryOperator.identity(), 30)).create();
        try {
            client.pods().inNamespace(COVERED).withName(pod.getMetadata().getName()).edit(p -> {
                p.getMetadata().getAnnotations().put(DiluNames.PRIORITY, "slo");
                return p;
            });
            return new Outcome("priority-changed-by-update", false, "the UPDATE was admitted");
        } catch (KubernetesClientException e) {
            boolean contained = e.getCode() >= 400 && e.getCode() < 500 && e.getMessage().contains("dilu.io/priority");
            return new Outcome("priority-changed-by-update", contained, e.getCode() + ": " + shorten(e.getMessage()));
        } finally {
            client.pods().inNamespace(COVERED).withName(pod.getMetadata().getName()).withGracePeriod(0).delete();
        }
    }

    private String review(String podJson) {
        return "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\","
                + "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","
                + "\"resource\":\"pods\"},\"namespace\":\"" + COVERED + "\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
                + "\"tenant\"},\"object\":" + podJson + "}}";
    }

    private static String gpuPodJson(String sm) {
        return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":\"" + COVERED + "\"},"
                + "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"dilu.io/gpu-sm\":\""
                + sm + "\"}}}]}}";
    }

    private Outcome sixThousandContainers() throws Exception {
        StringBuilder containers = new StringBuilder();
        for (int i = 0; i < 6_000; i++) {
            containers.append(i == 0 ? "" : ",").append("{\"name\":\"c").append(i)
                    .append("\",\"image\":\"i\",\"resources\":{\"limits\":{\"dilu.io/gpu-sm\":\"1\"}}}");
        }
        String pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"many\",\"namespace\":\"" + COVERED
                + "\"},\"spec\":{\"containers\":[" + containers + "]}}";
        return webhookReview("webhook-6000-containers", pod);
    }

    /** Contained when the webhook answers 200 with an AdmissionReview that denies, and still answers afterwards. */
    private Outcome webhookReview(String name, String podJson) throws Exception {
        Outcome o = webhookPost(name, review(podJson), 200);
        return new Outcome(name, o.contained() && o.detail().contains("\"allowed\":false"), o.detail());
    }

    private Outcome webhookPost(String name, String body, int expected) throws Exception {
        HttpResponse<String> r = tls.send(HttpRequest.newBuilder(URI.create(webhookBase + "/validate"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        boolean alive = tls.send(HttpRequest.newBuilder(URI.create(webhookBase + "/validate"))
                .POST(HttpRequest.BodyPublishers.ofString(review(gpuPodJson("30")))).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        return new Outcome(name, r.statusCode() == expected && alive && webhook.alive(),
                r.statusCode() + ": " + shorten(r.body().replace(" ", "")) + (alive ? "" : " (then no longer answering)"));
    }

    private Outcome admissionOverPlainHttp() throws Exception {
        String plain = webhookBase.replace("https://", "http://");
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(plain + "/validate"))
                    .POST(HttpRequest.BodyPublishers.ofString(review(gpuPodJson("30")))).header("Content-Type", "application/json")
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            return new Outcome("admission-over-plain-http", !r.body().contains("AdmissionReview"),
                    "plain HTTP to the HTTPS port answered " + r.statusCode());
        } catch (java.io.IOException e) {
            return new Outcome("admission-over-plain-http", true, "plain HTTP to the HTTPS port: " + e.getClass().getSimpleName());
        }
    }

    private void awaitWebhookSeesTheCluster() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            Outcome o = refusal("probe", "dilu.io/priority=slo", gpuPod("probe", p -> p.editMetadata()
                    .withAnnotations(Map.of(DiluNames.PRIORITY, "slo")).endMetadata(), 30));
            if (o.contained()) {
                return;
            }
            Thread.sleep(200);
        }
    }

    // ---- the extender ----

    /** Its API socket listens on 127.0.0.1 only: nothing outside kube-scheduler's pod can reach it. */
    private Outcome extenderOnLoopbackOnly() throws Exception {
        List<String> listeners = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            for (String line : Files.readAllLines(Path.of(table), StandardCharsets.US_ASCII)) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 3 && f[3].equals("0A") && f[1].endsWith(String.format(Locale.ROOT, ":%04X", extenderPort))) {
                    listeners.add(f[1]);
                }
            }
        }
        // 127.0.0.1, ::1 and ::ffff:127.0.0.1 as /proc/net spells them (little-endian words)
        boolean loopback = !listeners.isEmpty() && listeners.stream().allMatch(a -> a.startsWith("0100007F:")
                || a.startsWith("00000000000000000000000001000000:") || a.startsWith("0000000000000000FFFF00000100007F:"));
        return new Outcome("extender-other-interfaces", loopback, "listening on " + listeners + " (hex, /proc/net)");
    }

    private Outcome extenderPost(String name, String verb, String body, int expected) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort + "/" + verb))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        return new Outcome(name, r.statusCode() == expected && extender.alive(), r.statusCode() + ": " + shorten(r.body()));
    }

    private static String filterArgs(Pod pod) {
        return "{\"Pod\":" + io.fabric8.kubernetes.client.utils.Serialization.asJson(pod) + ",\"NodeNames\":[\"" + NODE + "\"]}";
    }

    /** A pod that does not exist asks for the whole GPU: nothing is reserved, a real pod still fits. */
    private Outcome madeUpPod() throws Exception {
        Pod ghost = gpuPod("ghost", UnaryOperator.identity(), 100);
        ghost.getMetadata().setUid("00000000-0000-0000-0000-000000000001");
        Outcome refused = extenderPost("extender-made-up-pod", "filter", filterArgs(ghost), 200);
        Pod real = createPending("after-ghost", 100);
        Outcome fits = extenderPost("extender-made-up-pod", "filter", filterArgs(real), 200);
        boolean contained = refused.detail().contains("\"Error\"") && fits.detail().contains(NODE)
                && !fits.detail().contains("\"Error\"");
        delete(real);
        return new Outcome("extender-made-up-pod", contained, "made-up pod: " + refused.detail() + "; a real 100% pod then: "
                + fits.detail());
    }

    /** Bind with a victim's UID under another pod's name: refused, and the victim's reservation holds. */
    private Outcome bindForeignPod() throws Exception {
        Pod victim = createPending("victim", 50);
        extenderPost("extender-bind-foreign-pod", "filter", filterArgs(victim), 200);
        String uid = victim.getMetadata().getUid();
        String ns = victim.getMetadata().getNamespace();
        Outcome foreign = extenderPost("extender-bind-foreign-pod", "bind", "{\"PodName\":\"attacker\",\"PodNamespace\":\""
                + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + NODE + "\"}", 200);
        Outcome own = extenderPost("extender-bind-foreign-pod", "bind", "{\"PodName\":\"victim\",\"PodNamespace\":\""
                + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + NODE + "\"}", 200);
        boolean bound = NODE.equals(client.pods().inNamespace(ns).withName("victim").get().getSpec().getNodeName());
        delete(victim);
        return new Outcome("extender-bind-foreign-pod", foreign.detail().contains("\"Error\"") && bound,
                "foreign bind: " + foreign.detail() + "; the victim's own: " + own.detail() + ", bound " + bound);
    }

    /** A body claiming 4294967346 percent for a pod: refused on its real quantity, nothing reserved. */
    private Outcome extenderHugeQuantity() throws Exception {
        Pod real = createPending("huge", 30);
        Pod claimed = new PodBuilder(real).editSpec().editFirstContainer().editResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity("4294967346")).endResources().endContainer().endSpec().build();
        // Pods deleted by the attacks before may still hold the GPU in the extender's view for a moment.
        Outcome o = extenderPost("extender-huge-quantity", "filter", filterArgs(claimed), 200);
        for (long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                o.detail().contains("FailedNodes\":{\"" + NODE) && System.nanoTime() < deadline; sleep(200)) {
            o = extenderPost("extender-huge-quantity", "filter", filterArgs(claimed), 200);
        }
        delete(real);
        return new Outcome("extender-huge-quantity", o.contained() && o.detail().contains("\"NodeNames\":[\"" + NODE),
                "placed on its real quantity (30%): " + o.detail());
    }

    /** A pending Dilu pod in a namespace the webhook is kept away from, created directly: the extender's to place. */
    private Pod createPending(String name, int sm) {
        Pod pod = gpuPod(name, p -> p.editMetadata().withNamespace(DIRECT).endMetadata()
                .editSpec().withSchedulerName("nobody-schedules-this").endSpec(), sm);
        Pod created = client.pods().inNamespace(DIRECT).resource(pod).create();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) { // the extender's watch must know it
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort + "/prioritize"))
                        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(filterArgs(created)))
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    break;
                }
            } catch (Exception ignored) {
                // not answering yet; retry
            }
            sleep(100);
        }
        sleep(500);
        return created;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void delete(Pod pod) {
        client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).withGracePeriod(0)
                .delete();
    }

    private static String shorten(String s) {
        String one = s.replace('\n', ' ');
        return one.length() <= 240 ? one : one.substring(0, 240) + "…";
    }
}
