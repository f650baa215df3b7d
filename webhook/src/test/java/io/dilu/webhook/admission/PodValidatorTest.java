package io.dilu.webhook.admission;

import io.dilu.kube.profile.ProfileSettings;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class PodValidatorTest {

    static final PodValidator.Facts FACTS = new PodValidator.Facts(OptionalLong.of(40_960), false, false);
    static final PodValidator.Facts WITH_RIGHTS = new PodValidator.Facts(OptionalLong.of(40_960), false, true);

    /** The refusals of a pod as the validating webhook sees it: mutated first, in a namespace without rights. */
    static List<String> errors(Pod pod) {
        return errors(pod, FACTS);
    }

    static List<String> errors(Pod pod, PodValidator.Facts facts) {
        return PodValidator.validate(Pods.mutated(pod, facts.quotaRights()), facts, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE).stream().map(FieldError::message).toList();
    }

    static Pod gpu(UnaryOperator<PodBuilder> edit) {
        return edit.apply(Pods.gpuPod(30, 1024)).build();
    }

    static Pod annotated(int sm, Map<String, String> annotations) {
        return Pods.gpuPod(sm, 1024).editMetadata().withAnnotations(annotations).endMetadata().build();
    }

    @Test
    void aSensiblePodPassesAndSoDoesItsMutationMutatedAgain() {
        assertThat(errors(Pods.gpuPod(30, 2048).build())).isEmpty();
        Pod serving = Pods.gpuPod(30, 2048).editMetadata().withLabels(Map.of(KnativeNames.SERVICE_LABEL, "fn")).endMetadata().build();
        for (boolean rights : new boolean[] {false, true}) {
            Pod once = Pods.mutated(serving, rights);
            PodValidator.Facts facts = rights ? WITH_RIGHTS : FACTS;
            assertThat(PodValidator.validate(once, facts, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).isEmpty();
            assertThat(PodValidator.validate(Pods.mutated(once, rights), facts, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).isEmpty();
        }
    }

    @Test
    void aPodBornParkedOrWakingIsRefused() {
        assertThat(errors(annotated(30, Map.of(DiluNames.PARKED, "2026-11-28T10:00:00Z")))).containsExactly(
                "metadata.annotations[dilu.io/parked]=2026-11-28T10:00:00Z is not allowed: must be absent when a pod is "
                        + "created: the autoscaler parks and wakes running instances");
        assertThat(errors(annotated(30, Map.of(DiluNames.WAKE, "t", DiluNames.WAKE_FAILED, "x")))).hasSize(2);
    }

    @Test
    void eachImpossibleShareIsNamedWithItsRange() {
        assertThat(errors(Pods.gpuPod(0, 2048).build())).containsExactly(
                "spec.containers[0](server).resources[dilu.io/gpu-sm]=0 is not allowed: must be an integer percent in 1..100");
        assertThat(errors(Pods.gpuPod(101, 2048).build())).singleElement().asString().contains("=101").contains("1..100");
        assertThat(errors(Pods.gpuPod(30, 50_000).build())).containsExactly(
                "spec.containers[0](server).resources[dilu.io/gpu-memory]=50000 is not allowed: must be an integer MiB in 1..40960 (the largest GPU in the cluster)");
        assertThat(errors(Pods.gpuPod(30, 0).build())).singleElement().asString().contains("gpu-memory]=0");
        assertThat(errors(annotated(30, Map.of(DiluNames.SM_LIMIT, "20"))))
                .containsExactly("dilu.io/sm-limit=20 is not allowed: must be an integer percent in 30..100 (request..100)");
        assertThat(errors(annotated(30, Map.of(DiluNames.SM_LIMIT, "120")))).singleElement().asString().contains("sm-limit=120");
        assertThat(errors(annotated(30, Map.of(DiluNames.BATCH_SIZE, "0"))))
                .containsExactly("dilu.io/batch-size=0 is not allowed: must be an integer of at least 1");
        assertThat(errors(annotated(30, Map.of(DiluNames.PRIORITY, "high"))))
                .containsExactly("dilu.io/priority=high is not allowed: must be one of slo, best-effort");
        assertThat(errors(annotated(30, Map.of(DiluNames.KLC_THRESHOLD, "0.8"))))
                .containsExactly("dilu.io/klc-threshold=0.8 is not allowed: must be a ratio in (1, 10], e.g. 1.6");
        assertThat(errors(annotated(30, Map.of(DiluNames.LLM, "yes"))))
                .containsExactly("dilu.io/llm=yes is not allowed: must be true or false");
    }

    @Test
    void aHugeExponentIsRefusedAsTextWithoutArithmetic() {
        Pod pod = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().editResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity("1e999999999")).endResources().endContainer().endSpec().build();
        assertThat(errors(pod)).containsExactly(
                "spec.containers[0](server).resources[dilu.io/gpu-sm]=1e999999999 is not allowed: must be an integer percent in 1..100");
    }

    @Test
    void wholeGpusBesideAShareAndPrivilegedContainersAreRefused() {
        Pod both = gpu(b -> b.editSpec().editFirstContainer().editResources()
                .addToLimits("nvidia.com/gpu", new Quantity("1")).endResources().endContainer().endSpec());
        assertThat(errors(both)).singleElement().asString().contains("[nvidia.com/gpu]=1").contains("not both");
        Pod privileged = gpu(b -> b.editSpec().editFirstContainer().withNewSecurityContext().withPrivileged(true)
                .endSecurityContext().endContainer().endSpec());
        assertThat(errors(privileged)).singleElement().asString().contains("securityContext.privileged=true")
                .contains("dilu.io/allow-privileged=true");
        assertThat(PodValidator.validate(Pods.mutated(privileged, false), new PodValidator.Facts(OptionalLong.of(40_960), true, false),
                Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).isEmpty();
    }

    @Test
    void initAndEphemeralContainersMayNotAskForDiluResources() {
        Pod init = gpu(b -> b.editSpec().addNewInitContainer().withName("init").withImage("x").withNewResources()
                .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("500"))).endResources().endInitContainer().endSpec());
        assertThat(errors(init)).containsExactly("spec.initContainers[0](init).resources[dilu.io/gpu-sm]=500 is not allowed: "
                + "must be absent: only spec.containers may ask for a Dilu GPU share (init and ephemeral containers are "
                + "neither placed nor limited by Dilu)");
        // A pod whose only share is in an init container is Dilu's all the same.
        Pod onlyInit = new PodBuilder().withNewMetadata().withName("p").endMetadata().withNewSpec().withSchedulerName("dilu-scheduler")
                .addNewInitContainer().withName("init").withImage("x").withNewResources()
                .withRequests(Map.of(DiluNames.GPU_MEMORY, new Quantity("1024"))).endResources().endInitContainer()
                .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build();
        // (Not mutated, it also lacks the seccomp profile and the dropped capabilities every container of a Dilu pod needs.)
        assertThat(errors(onlyInit)).hasSize(4).anySatisfy(e -> assertThat(e)
                .startsWith("spec.initContainers[0](init).resources[dilu.io/gpu-memory]=1024 is not allowed"));
        Pod ephemeral = gpu(b -> b.editSpec().addNewEphemeralContainer().withName("debug").withImage("x").withNewResources()
                .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("100"))).endResources().endEphemeralContainer().endSpec());
        assertThat(errors(ephemeral)).singleElement().asString()
                .startsWith("spec.ephemeralContainers[0](debug).resources[dilu.io/gpu-sm]=100 is not allowed: must be absent");
    }

    @Test
    void aPodMaySetNeitherLdPreloadNorDiluVariablesInAnyContainer() {
        Pod preload = gpu(b -> b.editSpec().addNewContainer().withName("app").withImage("x")
                .addToEnv(new EnvVar("LD_PRELOAD", "/tmp/x.so", null)).endContainer().endSpec());
        assertThat(errors(preload)).containsExactly("spec.containers[1](app).env[LD_PRELOAD]=/tmp/x.so is not allowed: "
                + "must be absent: a pod with a Dilu GPU share preloads only the hook (the webhook sets LD_PRELOAD=/opt/dilu/lib/libdilu-hook.so)");
        Pod fromConfig = gpu(b -> b.editSpec().editFirstContainer().addToEnv(new EnvVarBuilder().withName("LD_PRELOAD")
                .withNewValueFrom().withNewConfigMapKeyRef().withName("cfg").withKey("preload").endConfigMapKeyRef().endValueFrom()
                .build()).endContainer().endSpec());
        assertThat(errors(fromConfig)).singleElement().asString()
                .startsWith("spec.containers[0](server).env[LD_PRELOAD]=valueFrom.configMapKeyRef cfg/preload is not allowed");
        Pod control = gpu(b -> b.editSpec().addNewInitContainer().withName("init").withImage("x")
                .addToEnv(new EnvVar("DILU_CONTROL_DIR", "/tmp/mine", null)).endInitContainer().endSpec());
        assertThat(errors(control)).containsExactly("spec.initContainers[0](init).env[DILU_CONTROL_DIR]=/tmp/mine is not allowed: "
                + "must be absent: DILU_ variables are set by the webhook and the node agent only");
        // Posing as another pod: the webhook's own name, another value.
        Pod spoof = gpu(b -> b.editSpec().editFirstContainer().addToEnv(new EnvVar("DILU_POD_UID", "someone-else", null))
                .endContainer().endSpec());
        assertThat(errors(spoof)).singleElement().asString().startsWith("spec.containers[0](server).env[DILU_POD_UID]=someone-else is not allowed");
        // Exactly what the webhook injects, as the API server returns it, is fine anywhere.
        Pod echoed = gpu(b -> b.editSpec().addNewContainer().withName("side").withImage("x").addToEnv(new EnvVarBuilder()
                .withName("DILU_POD_NAME").withNewValueFrom().withNewFieldRef().withApiVersion("v1").withFieldPath("metadata.name")
                .endFieldRef().endValueFrom().build()).endContainer().endSpec());
        assertThat(errors(echoed)).isEmpty();
    }

    @Test
    void envFromOnAGpuContainerNeedsAPrefixThatCannotMakeAHookName() {
        Pod noPrefix = gpu(b -> b.editSpec().editFirstContainer().addNewEnvFrom().withNewConfigMapRef().withName("settings")
                .endConfigMapRef().endEnvFrom().endContainer().endSpec());
        assertThat(errors(noPrefix)).containsExactly("spec.containers[0](server).envFrom[0]=configMapRef settings with prefix \"\" "
                + "is not allowed: must be a prefix that cannot make LD_PRELOAD or a DILU_ name on a container with a Dilu GPU share: "
                + "not empty, not a beginning of LD_PRELOAD or of DILU_, not starting with DILU_ (e.g. APP_)");
        Pod secret = gpu(b -> b.editSpec().editFirstContainer().addNewEnvFrom().withPrefix("APP_").withNewConfigMapRef()
                .withName("ok").endConfigMapRef().endEnvFrom().addNewEnvFrom().withPrefix("DILU_X").withNewSecretRef()
                .withName("creds").endSecretRef().endEnvFrom().endContainer().endSpec());
        assertThat(errors(secret)).singleElement().asString()
                .startsWith("spec.containers[0](server).envFrom[1]=secretRef creds with prefix \"DILU_X\" is not allowed");
        // A container without a share may take any envFrom (the hook does not run in it).
        Pod sidecar = gpu(b -> b.editSpec().addNewContainer().withName("side").withImage("x").addNewEnvFrom().withNewConfigMapRef()
                .withName("settings").endConfigMapRef().endEnvFrom().endContainer().endSpec());
        assertThat(errors(sidecar)).isEmpty();
        for (String unsafe : new String[] {null, "", "L", "LD_", "LD_PRELOAD", "D", "DILU", "DILU_", "DILU_X"}) {
            assertThat(PodValidator.safePrefix(unsafe)).as(unsafe).isFalse();
        }
        for (String safe : new String[] {"APP_", "LD_X", "DILUX", "X_DILU_", "ld_"}) {
            assertThat(PodValidator.safePrefix(safe)).as(safe).isTrue();
        }
    }

    @Test
    void sysAdminAndAllCapabilitiesAreRefusedInAGpuPod() {
        Pod sysAdmin = gpu(b -> b.editSpec().addNewContainer().withName("app").withImage("x").withNewSecurityContext()
                .withNewCapabilities().withAdd("NET_ADMIN", "SYS_ADMIN").endCapabilities().endSecurityContext().endContainer().endSpec());
        assertThat(errors(sysAdmin)).containsExactly("spec.containers[1](app).securityContext.capabilities.add[1]=SYS_ADMIN is not "
                + "allowed: must be none of ALL, SYS_ADMIN, SYS_PTRACE, SYS_CHROOT, SYS_MODULE, SYS_RAWIO, SYS_BOOT, DAC_READ_SEARCH, BPF, "
                + "PERFMON, IPC_OWNER, MAC_ADMIN, MAC_OVERRIDE, CHECKPOINT_RESTORE in a pod with a Dilu GPU share (SYS_ADMIN: "
                + "mount, umount, setns and unshare: it can unmount or cover the hook and the grant page)");
        Pod spelled = gpu(b -> b.editSpec().editFirstContainer().withNewSecurityContext().withNewCapabilities()
                .withAdd("cap_sys_admin", "all").endCapabilities().endSecurityContext().endContainer().endSpec());
        assertThat(errors(spelled)).hasSize(2).allSatisfy(e -> assertThat(e).contains("securityContext.capabilities.add["));
        Pod plain = new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec().addNewContainer().withName("c")
                .withImage("x").withNewSecurityContext().withNewCapabilities().withAdd("SYS_ADMIN").endCapabilities()
                .endSecurityContext().endContainer().endSpec().build();
        assertThat(errors(plain)).as("not Dilu's business without a share").isEmpty();
    }

    static final String HOST_PATHS = HostPath.allowed(Pods.POLICY.protectedHostPaths());

    static Pod hostPaths(String... paths) {
        PodBuilder pod = new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec()
                .addNewContainer().withName("c").withImage("x").endContainer().endSpec();
        for (int i = 0; i < paths.length; i++) {
            pod.editSpec().addNewVolume().withName("v" + i).withNewHostPath().withPath(paths[i]).endHostPath().endVolume().endSpec();
        }
        return pod.build();
    }

    @Test
    void noPodMayMountTheAgentsDirectoriesFromTheHost() {
        Pod pod = hostPaths("/data", "/var/lib/dilu-other", "/var/lib/dilu/x", "/var/lib/", "/var/lib//kubelet/./device-plugins/",
                "/", "/opt", "/opt/dilu/lib/libdilu-hook.so");
        assertThat(errors(pod)).containsExactly(
                "spec.volumes[2](v2).hostPath.path=/var/lib/dilu/x is not allowed: must be " + HOST_PATHS,
                "spec.volumes[3](v3).hostPath.path=/var/lib/ is not allowed: must be " + HOST_PATHS,
                "spec.volumes[4](v4).hostPath.path=/var/lib//kubelet/./device-plugins/ is not allowed: must be " + HOST_PATHS,
                "spec.volumes[5](v5).hostPath.path=/ is not allowed: must be " + HOST_PATHS,
                "spec.volumes[6](v6).hostPath.path=/opt is not allowed: must be " + HOST_PATHS,
                "spec.volumes[7](v7).hostPath.path=/opt/dilu/lib/libdilu-hook.so is not allowed: must be " + HOST_PATHS);
    }

    /**
     * Issue 45: what else of the node a hostPath reached in a Dilu pod's namespace: every pod's ServiceAccount token,
     * the kubelet's PKI, the container runtime's socket, the node's libraries (the GPU driver's among them), and the
     * links into /proc that /dev keeps.
     */
    @Test
    void noPodMayMountTheKubeletsTheRuntimesOrTheNodesLibraries() {
        List<String> refused = List.of("/var/lib/kubelet/pods", "/var/lib/kubelet/pki", "/var/lib/kubelet",
                "/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock", "/var/lib/containerd",
                "/var/run/crio/crio.sock", "/var/run/docker.sock", "/etc/kubernetes/kubelet.conf",
                "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/lib64", "/usr/local/nvidia/lib64",
                "/run/nvidia/driver", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/core", "/usr");
        Pod pod = hostPaths(refused.toArray(String[]::new));
        assertThat(errors(pod)).hasSize(refused.size());
        assertThat(errors(hostPaths("/data/models", "/mnt/cache", "/usr/share/models", "/dev/shm", "/var/lib/kubeletx")))
                .as("a model cache, shared memory, a neighbour of the kubelet's directory").isEmpty();
    }

    /** Issue 36: the agent's directory by another name, through the kernel's view of a process's root. */
    @Test
    void noPodMayReachTheNodeThroughTheKernelsViewsOrStepBack() {
        List<String> routes = List.of("/proc/1/root/var/lib/dilu", "/proc/1/root/var/lib/dilu/containers", "/proc/self/root/opt/dilu",
                "/proc/1/root", "/proc/thread-self/cwd", "/proc/42/fd/3", "/proc/1/map_files", "/proc", "/proc/", "//proc//1/./root",
                "/sys", "/sys/bus/pci/devices/0000:3b:00.0/resource0", "/dev/fd/3", "/var/run/../lib/dilu",
                "/data/../var/lib/dilu", "/data/..", "/srv/x/../y");
        for (String route : routes) {
            assertThat(errors(hostPaths(route))).as(route).containsExactly("spec.volumes[0](v0).hostPath.path=" + route
                    + " is not allowed: must be " + HOST_PATHS);
        }
        // The same for a pod with a share, and each volume named by its index.
        Pod gpu = gpu(b -> b.editSpec().addNewVolume().withName("scratch").withNewEmptyDir().endEmptyDir().endVolume()
                .addNewVolume().withName("root").withNewHostPath().withPath("/proc/1/root/var/lib/dilu").endHostPath().endVolume()
                .endSpec());
        assertThat(errors(gpu)).singleElement().asString().startsWith("spec.volumes[1](root).hostPath.path=/proc/1/root/var/lib/dilu "
                + "is not allowed");
        // Neighbours by name only: neither a kernel view nor a step back.
        assertThat(errors(hostPaths("/procs", "/proc-data", "/system", "/dev", "/dev/nvidia0", "/srv/..data", "/srv/...")))
                .isEmpty();
    }

    @Test
    void aGpuContainerMayNotMountOverTheHookOrTheControlBlock() {
        Pod pod = gpu(b -> b.editSpec().addNewVolume().withName("scratch").withNewEmptyDir().endEmptyDir().endVolume()
                .editFirstContainer().addNewVolumeMount().withName("scratch").withMountPath("/opt").endVolumeMount()
                .addNewVolumeMount().withName("scratch").withMountPath("/opt/dilu/lib").endVolumeMount()
                .addNewVolumeMount().withName("scratch").withMountPath("/etc/ld.so.preload").withSubPath("x").endVolumeMount()
                .endContainer().endSpec());
        assertThat(errors(pod)).containsExactly(
                "spec.containers[0](server).volumeMounts[1](scratch).mountPath=/opt/dilu/lib is not allowed: must be a path "
                        + "neither at nor under /opt/dilu/lib, /var/run/dilu, /run/dilu, /etc/ld.so.preload (the node agent "
                        + "mounts the hook and the control block there)",
                "spec.containers[0](server).volumeMounts[2](scratch).mountPath=/etc/ld.so.preload is not allowed: must be a path "
                        + "neither at nor under /opt/dilu/lib, /var/run/dilu, /run/dilu, /etc/ld.so.preload (the node agent "
                        + "mounts the hook and the control block there)");
    }

    @Test
    void aDiluPodIsCreatedUnboundAndForTheDiluScheduler() {
        Pod bound = gpu(b -> b.editSpec().withNodeName("gpu-node-1").endSpec());
        assertThat(errors(bound)).containsExactly("spec.nodeName=gpu-node-1 is not allowed: must be empty when a pod with a Dilu GPU "
                + "share is created (dilu-scheduler places it; a pod bound by hand skips the accounting of shares)");
        Pod other = gpu(b -> b.editSpec().withSchedulerName("my-scheduler").endSpec());
        assertThat(errors(other)).containsExactly("spec.schedulerName=my-scheduler is not allowed: must be dilu-scheduler for a pod "
                + "with a Dilu GPU share (the mutating webhook sets it where the pod names none or default-scheduler)");
        assertThat(errors(gpu(b -> b.editSpec().withSchedulerName("default-scheduler").endSpec()))).isEmpty();
    }

    @Test
    void whatTakesFromNeighboursNeedsTheNamespacesRight() {
        Pod slo = annotated(1, Map.of(DiluNames.PRIORITY, "slo"));
        assertThat(errors(slo)).containsExactly("dilu.io/priority=slo is not allowed: must be best-effort unless the namespace has "
                + "the label dilu.io/allow-slo=true (granted by an administrator)");
        assertThat(errors(slo, WITH_RIGHTS)).isEmpty();
        Pod limit = annotated(1, Map.of(DiluNames.SM_LIMIT, "100"));
        assertThat(errors(limit)).containsExactly("dilu.io/sm-limit=100 is not allowed: must be at most 2 (min(100, 2 × request)) "
                + "unless the namespace has the label dilu.io/allow-slo=true (granted by an administrator)");
        assertThat(errors(limit, WITH_RIGHTS)).isEmpty();
        assertThat(errors(annotated(30, Map.of(DiluNames.KLC_THRESHOLD, "1.2")))).singleElement().asString()
                .startsWith("dilu.io/klc-threshold=1.2 is not allowed: must be at least 1.6 unless");
        assertThat(errors(annotated(30, Map.of(DiluNames.LLM, "true")))).singleElement().asString()
                .startsWith("dilu.io/llm=true is not allowed: must be false unless");
        // Judged by the smallest request: a 10% container may not borrow the 50% one's default limit.
        Pod mixed = Pods.gpuPod(50, 1024).editMetadata().withAnnotations(Map.of(DiluNames.SM_LIMIT, "100")).endMetadata().editSpec()
                .addNewContainer().withName("small").withImage("x").withNewResources().withLimits(Pods.share(10, 1024)).endResources()
                .endContainer().endSpec().build();
        assertThat(errors(mixed)).singleElement().asString().startsWith("dilu.io/sm-limit=100 is not allowed: must be at most 20");
    }

    @Test
    void aThresholdIsJudgedAgainstTheNodesConfiguredOne() {
        AdmissionPolicy strict = new AdmissionPolicy(Pods.HOOK, Pods.POLICY.protectedHostPaths(),
                Pods.POLICY.protectedContainerPaths(), Pods.POLICY.assignedGpusWriters(), Pods.POLICY.parkingWriters(),
                Pods.POLICY.maxRequestBytes(), Pods.POLICY.maxContainers(), 2.0);
        Pod pod = Pods.mutated(annotated(30, Map.of(DiluNames.KLC_THRESHOLD, "1.8")), false);
        assertThat(PodValidator.validate(pod, FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).as("above the default 1.6").isEmpty();
        assertThat(PodValidator.validate(pod, FACTS, strict, ToolkitEnv.ConfigMaps.NONE)).extracting(FieldError::message)
                .singleElement().asString().startsWith("dilu.io/klc-threshold=1.8 is not allowed: must be at least 2.0 unless");
    }

    @Test
    void aProfileIsRefusedByNameWhenItNeedsARightTheNamespaceLacks() {
        ProfileSettings bert = new ProfileSettings("bert", 25, Optional.of(45), 6144, Optional.of(8), Optional.of("slo"), false, Optional.empty(), Optional.empty());
        assertThat(PodValidator.profile("fns", "bert", Optional.of(bert), false, Pods.ETA_VIOLATION)).extracting(FieldError::message).containsExactly(
                "metadata.annotations[dilu.io/profile]=bert is not allowed: must be a GpuFunctionProfile that needs no quota right "
                        + "this namespace lacks; it gives dilu.io/priority=slo, which must be best-effort unless the namespace "
                        + "has the label dilu.io/allow-slo=true (granted by an administrator)");
        assertThat(PodValidator.profile("fns", "bert", Optional.of(bert), true, Pods.ETA_VIOLATION)).isEmpty();
        ProfileSettings modest = new ProfileSettings("bert", 25, Optional.of(50), 6144, Optional.of(8), Optional.of("best-effort"), false, Optional.empty(), Optional.empty());
        assertThat(PodValidator.profile("fns", "bert", Optional.of(modest), false, Pods.ETA_VIOLATION)).isEmpty();
        assertThat(PodValidator.profile("fns", "gone", Optional.empty(), true, Pods.ETA_VIOLATION)).extracting(FieldError::message).containsExactly(
                "metadata.annotations[dilu.io/profile]=gone is not allowed: must be the name of a GpuFunctionProfile in namespace fns "
                        + "that has settings (written by hand, or profiled and Ready)");
    }

    @Test
    void anEphemeralContainerAddedLaterIsHeldToTheSameRules() {
        Pod before = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        Pod after = new PodBuilder(before).editSpec().addNewEphemeralContainer().withName("debug").withImage("busybox")
                .addToEnv(new EnvVar("LD_PRELOAD", "/tmp/unhook.so", null)).withNewSecurityContext().withNewCapabilities()
                .withAdd("SYS_ADMIN").endCapabilities().endSecurityContext().endEphemeralContainer().endSpec().build();
        assertThat(ephemeral(before, after)).extracting(FieldError::message)
                .hasSize(2).anySatisfy(m -> assertThat(m).startsWith("spec.ephemeralContainers[0](debug).env[LD_PRELOAD]=/tmp/unhook.so"))
                .anySatisfy(m -> assertThat(m).startsWith("spec.ephemeralContainers[0](debug).securityContext.capabilities.add[0]=SYS_ADMIN"));
        assertThat(ephemeral(after, after)).as("only what is added").isEmpty();
    }

    static List<FieldError> ephemeral(Pod before, Pod after) {
        return PodValidator.ephemeralContainers(PodValidator.addedEphemeralContainers(before.getSpec(), after.getSpec()),
                PodMutator.concerns(after), FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE);
    }
}
