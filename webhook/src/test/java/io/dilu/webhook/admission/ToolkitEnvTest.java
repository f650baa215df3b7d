package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvFromSourceBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The NVIDIA toolkit's variables, by every route a pod can write them, on every kind of container. */
class ToolkitEnvTest {

    static final ToolkitEnv.ConfigMaps CONFIG_MAPS = new ToolkitEnv.ConfigMaps(
            Map.of("gpu-env", Set.of("MODEL", "NVIDIA_VISIBLE_DEVICES"), "suffixes", Set.of("VISIBLE_DEVICES"),
                    "settings", Set.of("MODEL", "BATCH")),
            Map.of("unreadable", "connection refused"));

    /** A pod without a GPU share: only the toolkit's rules (and the host paths) apply. */
    static Pod plain(Container... containers) {
        return new PodBuilder().withNewMetadata().withName("web").withNamespace("fns").endMetadata().withNewSpec()
                .withContainers(containers).endSpec().build();
    }

    static Container container(String name, EnvVar... env) {
        return new ContainerBuilder().withName(name).withImage("x").withEnv(env).build();
    }

    static EnvVar env(String name, String value) {
        return new EnvVar(name, value, null);
    }

    static List<String> errors(Pod pod) {
        return PodValidator.validate(Pods.mutated(pod, false), PodValidatorTest.FACTS, Pods.POLICY, CONFIG_MAPS).stream()
                .map(FieldError::message).toList();
    }

    @Test
    void aContainerWithoutAGpuMayWriteOnlyTheValuesThatHandOutNone() {
        assertThat(errors(plain(container("c", env("NVIDIA_VISIBLE_DEVICES", "all"))))).containsExactly(
                "spec.containers[0](c).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed: must be void, none or empty, written in "
                        + "the pod, on a container without a GPU (any other value hands it GPUs of the node with the NVIDIA "
                        + "container toolkit's defaults)");
        for (String none : new String[] {"void", "none", "", " void "}) {
            assertThat(errors(plain(container("c", env("NVIDIA_VISIBLE_DEVICES", none))))).as("'%s'", none).isEmpty();
        }
        for (String some : new String[] {"0", "GPU-1,GPU-2", "VOID", "void,all", "$(GPUS)", "nvidia.com/gpu=all"}) {
            assertThat(errors(plain(container("c", env("NVIDIA_VISIBLE_DEVICES", some))))).as(some).hasSize(1);
        }
        EnvVar hidden = new EnvVarBuilder().withName("NVIDIA_VISIBLE_DEVICES").withNewValueFrom().withNewConfigMapKeyRef()
                .withName("cfg").withKey("gpus").endConfigMapKeyRef().endValueFrom().build();
        assertThat(errors(plain(container("c", hidden)))).singleElement().asString()
                .startsWith("spec.containers[0](c).env[NVIDIA_VISIBLE_DEVICES]=valueFrom.configMapKeyRef cfg/gpus is not allowed");
    }

    @Test
    void everyOtherToolkitVariableIsRefusedOnAContainerWithoutAGpu() {
        for (String name : List.of("NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
                "NVIDIA_IMEX_CHANNELS", "NVIDIA_GDS", "NVIDIA_MOFED", "NVIDIA_GDRCOPY", "NVIDIA_NVSWITCH", "CUDA_VERSION")) {
            assertThat(errors(plain(container("c", env(name, "all"))))).as(name).singleElement().asString()
                    .startsWith("spec.containers[0](c).env[" + name + "]=all is not allowed: must be absent on a container without a GPU");
        }
        // Names the toolkit does not read, and the right names in another case, are the pod's own business.
        assertThat(errors(plain(container("c", env("CUDA_VISIBLE_DEVICES", "0"), env("nvidia_visible_devices", "all"),
                env("NVIDIA_REQUIRE_CUDA", "cuda>=12"))))).isEmpty();
    }

    @Test
    void aContainerWithADiluShareKeepsTheDeviceListTheNodeAgentGivesIt() {
        Pod pod = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().addToEnv(env("NVIDIA_VISIBLE_DEVICES", "void"),
                env("NVIDIA_DRIVER_CAPABILITIES", "compute,graphics"), env("NVIDIA_MIG_MONITOR_DEVICES", "all"),
                env("CUDA_VERSION", "12.4")).endContainer().endSpec().build();
        assertThat(errors(pod)).containsExactly(
                "spec.containers[0](server).env[NVIDIA_VISIBLE_DEVICES]=void is not allowed: must be absent on a container with "
                        + "a Dilu GPU share (the node agent hands it its GPU at Allocate; the pod's own NVIDIA_VISIBLE_DEVICES "
                        + "would override or widen that)",
                "spec.containers[0](server).env[NVIDIA_DRIVER_CAPABILITIES]=compute,graphics is not allowed: must be compute, "
                        + "utility or both, written in the pod, on a container with a Dilu GPU share (graphics, video and "
                        + "display work is not the hook's to throttle)",
                "spec.containers[0](server).env[NVIDIA_MIG_MONITOR_DEVICES]=all is not allowed: must be absent on a container "
                        + "with a Dilu GPU share (the node agent hands it its GPU at Allocate; the pod's own "
                        + "NVIDIA_MIG_MONITOR_DEVICES would override or widen that)");
        assertThat(errors(Pods.gpuPod(30, 1024).editSpec().editFirstContainer()
                .addToEnv(env("NVIDIA_DRIVER_CAPABILITIES", "utility, compute")).endContainer().endSpec().build())).isEmpty();
    }

    @Test
    void theSidecarsInitAndEphemeralContainersOfADiluPodHaveNoGpuOfTheirOwn() {
        Pod pod = Pods.gpuPod(30, 1024).editSpec().addNewContainer().withName("sidecar").withImage("x")
                .addToEnv(env("NVIDIA_VISIBLE_DEVICES", "all")).endContainer().addNewInitContainer().withName("init")
                .withImage("x").addToEnv(env("NVIDIA_VISIBLE_DEVICES", "all")).endInitContainer().endSpec().build();
        assertThat(errors(pod)).extracting(m -> m.substring(0, m.indexOf('='))).containsExactly(
                "spec.containers[1](sidecar).env[NVIDIA_VISIBLE_DEVICES]", "spec.initContainers[0](init).env[NVIDIA_VISIBLE_DEVICES]");
        Pod created = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        Pod debugged = new PodBuilder(created).editSpec().addNewEphemeralContainer().withName("debug").withImage("x")
                .addToEnv(env("NVIDIA_VISIBLE_DEVICES", "all")).endEphemeralContainer().endSpec().build();
        assertThat(PodValidatorTest.ephemeral(created, debugged)).extracting(FieldError::message).singleElement().asString()
                .startsWith("spec.ephemeralContainers[0](debug).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed");
    }

    @Test
    void wholeGpusMayChooseTheirCapabilitiesButNotTheirDevices() {
        Container whole = new ContainerBuilder(container("train", env("NVIDIA_DRIVER_CAPABILITIES", "all"), env("NVIDIA_GDS", "enabled"),
                env("NVIDIA_VISIBLE_DEVICES", "all"), env("NVIDIA_MIG_CONFIG_DEVICES", "all"))).withNewResources()
                .withLimits(Map.of("nvidia.com/gpu", new Quantity("1"))).endResources().build();
        assertThat(errors(plain(whole))).extracting(m -> m.substring(0, m.indexOf('='))).containsExactly(
                "spec.containers[0](train).env[NVIDIA_VISIBLE_DEVICES]", "spec.containers[0](train).env[NVIDIA_MIG_CONFIG_DEVICES]");
    }

    @Test
    void anEnvFromIsJudgedByTheKeysOfItsConfigMapOrByItsPrefix() {
        assertThat(ToolkitEnv.reachable("APP_", ToolkitEnv.Gpus.NONE)).isEmpty();
        assertThat(ToolkitEnv.reachable("NVIDIA_", ToolkitEnv.Gpus.NONE)).contains("NVIDIA_VISIBLE_DEVICES").doesNotContain("CUDA_VERSION");
        assertThat(ToolkitEnv.reachable("NVIDIA_DRIVER_", ToolkitEnv.Gpus.WHOLE)).as("whole GPUs choose their capabilities").isEmpty();
        assertThat(ToolkitEnv.reachable("NVIDIA_VISIBLE_DEVICES", ToolkitEnv.Gpus.NONE)).as("a key is never empty").isEmpty();

        Container fromGpuEnv = new ContainerBuilder(container("c")).withEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef()
                .withName("gpu-env").endConfigMapRef().build()).build();
        assertThat(ToolkitEnv.configMapsToRead(ContainerView.all(plain(fromGpuEnv).getSpec()))).containsExactly("gpu-env");
        assertThat(errors(plain(fromGpuEnv))).containsExactly("spec.containers[0](c).envFrom[0]=configMapRef gpu-env with prefix \"\", "
                + "making NVIDIA_VISIBLE_DEVICES is not allowed: must be a ConfigMap whose keys make none of NVIDIA_VISIBLE_DEVICES, "
                + "NVIDIA_DRIVER_CAPABILITIES, NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_MIG_MONITOR_DEVICES, NVIDIA_IMEX_CHANNELS, NVIDIA_GDS, "
                + "NVIDIA_MOFED, NVIDIA_GDRCOPY, NVIDIA_NVSWITCH, CUDA_VERSION on this container, or a prefix that cannot make them "
                + "(e.g. APP_): void, none or empty, written in the pod, on a container without a GPU (any other value hands it GPUs "
                + "of the node with the NVIDIA container toolkit's defaults)");
        Container prefixed = new ContainerBuilder(container("c")).withEnvFrom(new EnvFromSourceBuilder().withPrefix("NVIDIA_")
                .withNewConfigMapRef().withName("suffixes").endConfigMapRef().build()).build();
        assertThat(errors(plain(prefixed))).singleElement().asString().contains("making NVIDIA_VISIBLE_DEVICES");
        Container harmless = new ContainerBuilder(container("c")).withEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef()
                .withName("settings").endConfigMapRef().build(), new EnvFromSourceBuilder().withNewConfigMapRef().withName("missing")
                .endConfigMapRef().build(), new EnvFromSourceBuilder().withPrefix("APP_").withNewConfigMapRef().withName("gpu-env")
                .endConfigMapRef().build()).build();
        assertThat(errors(plain(harmless))).as("harmless keys, a ConfigMap not there, a safe prefix").isEmpty();
        Container unreadable = new ContainerBuilder(container("c")).withEnvFrom(new EnvFromSourceBuilder().withNewConfigMapRef()
                .withName("unreadable").endConfigMapRef().build()).build();
        assertThat(errors(plain(unreadable))).singleElement().asString().contains("envFrom[0]=configMapRef unreadable")
                .contains("(it could not: connection refused; retry)");
    }

    @Test
    void secretsAreNotReadSoADiluPodMayTakeThemOnlyWithASafePrefix() {
        Container secret = new ContainerBuilder(container("sidecar")).withEnvFrom(new EnvFromSourceBuilder().withNewSecretRef()
                .withName("creds").endSecretRef().build()).build();
        assertThat(errors(plain(secret))).as("elsewhere the node's setting is the layer").isEmpty();
        Pod dilu = Pods.gpuPod(30, 1024).editSpec().addToContainers(secret).endSpec().build();
        assertThat(errors(dilu)).singleElement().asString().startsWith("spec.containers[1](sidecar).envFrom[0]=secretRef creds "
                + "with prefix \"\" is not allowed: must be a prefix that cannot make NVIDIA_VISIBLE_DEVICES");
        Pod prefixed = Pods.gpuPod(30, 1024).editSpec().addToContainers(new ContainerBuilder(secret).withEnvFrom(
                new EnvFromSourceBuilder().withPrefix("APP_").withNewSecretRef().withName("creds").endSecretRef().build()).build())
                .endSpec().build();
        assertThat(errors(prefixed)).isEmpty();
    }
}
