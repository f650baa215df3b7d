package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The neighbours of a GPU container: every other container of its pod, and the pod's own fields. */
class ConfinementTest {

    static List<String> errors(Pod pod) {
        return PodValidatorTest.errors(pod);
    }

    static Pod withSidecar(UnaryOperator<ContainerBuilder> edit) {
        return Pods.gpuPod(30, 1024).editSpec().addToContainers(edit.apply(new ContainerBuilder().withName("sidecar")
                .withImage("x")).build()).endSpec().build();
    }

    @Test
    void aPrivilegedNeighbourOfAnyKindIsRefusedUnlessTheNamespaceAllowsIt() {
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withPrivileged(true).endSecurityContext()))).containsExactly(
                "spec.containers[1](sidecar).securityContext.privileged=true is not allowed: must be false in a pod with a Dilu GPU "
                        + "share (a privileged container has every device and capability of the node, the GPU container's mounts "
                        + "and processes within reach); label the namespace dilu.io/allow-privileged=true to allow it");
        Pod init = Pods.gpuPod(30, 1024).editSpec().addNewInitContainer().withName("init").withImage("x").withNewSecurityContext()
                .withPrivileged(true).endSecurityContext().endInitContainer().endSpec().build();
        assertThat(errors(init)).singleElement().asString().startsWith("spec.initContainers[0](init).securityContext.privileged=true");
        PodValidator.Facts allowed = new PodValidator.Facts(OptionalLong.of(40_960), true, false);
        assertThat(PodValidatorTest.errors(init, allowed)).as("dilu.io/allow-privileged=true, as documented").isEmpty();

        Pod created = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        Pod debugged = new PodBuilder(created).editSpec().addNewEphemeralContainer().withName("debug").withImage("x")
                .withNewSecurityContext().withPrivileged(true).endSecurityContext().endEphemeralContainer().endSpec().build();
        assertThat(PodValidatorTest.ephemeral(created, debugged)).extracting(FieldError::message).singleElement().asString()
                .startsWith("spec.ephemeralContainers[0](debug).securityContext.privileged=true is not allowed");
    }

    @Test
    void theNodesNamespacesAndASharedProcessNamespaceAreRefused() {
        Pod pod = Pods.gpuPod(30, 1024).editSpec().withHostPID(true).withHostIPC(true).withHostNetwork(true)
                .withShareProcessNamespace(true).endSpec().build();
        assertThat(errors(pod)).extracting(m -> m.substring(0, m.indexOf(" is not allowed")))
                .containsExactly("spec.hostPID=true", "spec.hostIPC=true", "spec.hostNetwork=true", "spec.shareProcessNamespace=true");
        assertThat(errors(pod)).first().asString().isEqualTo("spec.hostPID=true is not allowed: must be false in a pod with a Dilu "
                + "GPU share (every process of the node, other tenants' GPU processes among them, would be visible and, as the "
                + "same user, traceable)");
        Pod plain = new PodBuilder(pod).editSpec().editFirstContainer().withResources(null).endContainer().endSpec().build();
        assertThat(errors(plain)).as("Pod Security's business without a share").isEmpty();
    }

    @Test
    void everyCapabilityThatReachesAnotherProcessOrTheNodeIsRefusedAndTheRestAllowed() {
        for (String cap : Confinement.REACHING.keySet()) {
            for (String spelled : new String[] {cap, "CAP_" + cap, cap.toLowerCase(java.util.Locale.ROOT)}) {
                assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withNewCapabilities().withAdd(spelled)
                        .endCapabilities().endSecurityContext()))).as(spelled).singleElement().asString()
                        .startsWith("spec.containers[1](sidecar).securityContext.capabilities.add[0]=" + spelled + " is not allowed")
                        .contains("(" + cap + ": ");
            }
        }
        // A service mesh's init container (NET_ADMIN, NET_RAW) reaches the pod's own network only.
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withNewCapabilities()
                .withAdd("NET_ADMIN", "NET_RAW", "CHOWN", "SETUID").endCapabilities().endSecurityContext()))).isEmpty();
    }

    @Test
    void anUnmaskedProcIsRefused() {
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withProcMount("Unmasked").endSecurityContext())))
                .singleElement().asString().startsWith("spec.containers[1](sidecar).securityContext.procMount=Unmasked is not allowed");
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withProcMount("Default").endSecurityContext()))).isEmpty();
    }

    @Test
    void aGpuPodGetsTheRuntimesDefaultProfileAndUnconfinedIsRefusedEverywhere() {
        Pod mutated = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        assertThat(mutated.getSpec().getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
        Pod own = Pods.gpuPod(30, 1024).editSpec().withNewSecurityContext().withNewSeccompProfile().withType("Localhost")
                .withLocalhostProfile("fn.json").endSeccompProfile().endSecurityContext().endSpec().build();
        assertThat(Pods.mutated(own, false).getSpec().getSecurityContext().getSeccompProfile().getType()).as("its own kept")
                .isEqualTo("Localhost");
        assertThat(errors(own)).isEmpty();

        Pod pod = Pods.gpuPod(30, 1024).editSpec().withNewSecurityContext().withNewSeccompProfile().withType("Unconfined")
                .endSeccompProfile().endSecurityContext().endSpec().build();
        assertThat(errors(pod)).containsExactly("spec.securityContext.seccompProfile.type=Unconfined is not allowed: must be "
                + "RuntimeDefault or Localhost in a pod with a Dilu GPU share (unconfined, a process without capabilities can "
                + "still create a user namespace and mount over the hook: unshare -Urm)");
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withNewSeccompProfile().withType("Unconfined")
                .endSeccompProfile().endSecurityContext()))).singleElement().asString()
                .startsWith("spec.containers[1](sidecar).securityContext.seccompProfile.type=Unconfined is not allowed");
        assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withNewSeccompProfile().withType("RuntimeDefault")
                .endSeccompProfile().endSecurityContext()))).isEmpty();
    }

    @Test
    void theDeprecatedAnnotationsCountAsTheKubeletReadsThem() {
        Pod podAnnotation = Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(Confinement.POD_SECCOMP_ANNOTATION,
                "unconfined")).endMetadata().build();
        assertThat(Pods.mutated(podAnnotation, false).getSpec().getSecurityContext()).as("the API server makes the field of it")
                .isNull();
        assertThat(errors(podAnnotation)).containsExactly("metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]=unconfined "
                + "is not allowed: must be runtime/default, docker/default or localhost/<profile> in a pod with a Dilu GPU share, "
                + "or no such annotation (unconfined, a process can create a user namespace and mount over the hook)");
        // A container's annotation wins over the pod's field in the kubelets that read it.
        Pod containerAnnotation = Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(
                Confinement.CONTAINER_SECCOMP_ANNOTATION + "server", "unconfined")).endMetadata().build();
        assertThat(errors(containerAnnotation)).singleElement().asString()
                .startsWith("metadata.annotations[container.seccomp.security.alpha.kubernetes.io/server]=unconfined is not allowed");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(Confinement.POD_SECCOMP_ANNOTATION,
                "runtime/default")).endMetadata().build())).isEmpty();
    }

    @Test
    void aPodThatReachesValidationWithoutAProfileIsRefused() {
        Pod unmutated = Pods.gpuPod(30, 1024).editSpec().withSchedulerName("dilu-scheduler").editFirstContainer()
                .withNewSecurityContext().withNewCapabilities().withDrop("ALL").endCapabilities().endSecurityContext()
                .endContainer().endSpec().build();
        assertThat(PodValidator.validate(unmutated, PodValidatorTest.FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE))
                .extracting(FieldError::message).containsExactly("spec.securityContext.seccompProfile.type=unset is not allowed: "
                        + "must be RuntimeDefault or Localhost, here or on each container, in a pod with a Dilu GPU share (the "
                        + "mutating webhook sets RuntimeDefault where the pod sets none; without one a container runs unconfined)");
        Pod eachOwn = new PodBuilder(unmutated).editSpec().editFirstContainer().editSecurityContext().withNewSeccompProfile()
                .withType("RuntimeDefault").endSeccompProfile().endSecurityContext().endContainer().endSpec().build();
        assertThat(PodValidator.validate(eachOwn, PodValidatorTest.FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).isEmpty();
    }

    /** Issue 36: chroot into a tree without /etc/ld.so.preload runs programs without the hook. */
    @Test
    void chrootAndPtraceAreDroppedFromEveryContainerAndNeverAddedBack() {
        Pod mutated = Pods.mutated(Pods.gpuPod(30, 1024).editSpec().addNewInitContainer().withName("init").withImage("x")
                .endInitContainer().endSpec().build(), false);
        assertThat(PodValidator.validate(mutated, PodValidatorTest.FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE)).isEmpty();

        // Reaching validation without them (the mutating webhook skipped, or its work undone by a later one): refused.
        Pod undone = new PodBuilder(mutated).editSpec().editFirstContainer().editSecurityContext().editCapabilities()
                .withDrop("NET_RAW").endCapabilities().endSecurityContext().endContainer().editFirstInitContainer()
                .withSecurityContext(null).endInitContainer().endSpec().build();
        String why = " (the mutating webhook adds them; SYS_CHROOT: chroot: a root process runs programs under a tree "
                + "without /etc/ld.so.preload, so without the hook)";
        assertThat(PodValidator.validate(undone, PodValidatorTest.FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE))
                .extracting(FieldError::message).containsExactly(
                        "spec.containers[0](server).securityContext.capabilities.drop=[NET_RAW] is not allowed: must be a list "
                                + "with SYS_CHROOT and SYS_PTRACE (or ALL) in a pod with a Dilu GPU share" + why,
                        "spec.initContainers[0](init).securityContext.capabilities.drop=unset is not allowed: must be a list "
                                + "with SYS_CHROOT and SYS_PTRACE (or ALL) in a pod with a Dilu GPU share" + why);

        // Dropped by a spelling a runtime reads as another name (containerd drops "CAP_" + its upper case): it drops
        // nothing, so it does not count; the mutator adds the bare name beside it, and validation refuses it alone.
        for (String spelling : new String[] {"CAP_SYS_CHROOT", "CHROOT", "CAP_CHROOT", " SYS_CHROOT", "SYS_CHROOT ", "CAP_ALL",
                "SYS-CHROOT"}) {
            Pod asked = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().withNewSecurityContext().withNewCapabilities()
                    .withDrop(spelling, "SYS_PTRACE").endCapabilities().endSecurityContext().endContainer().endSpec().build();
            assertThat(PodValidator.validate(asked, PodValidatorTest.FACTS, Pods.POLICY, ToolkitEnv.ConfigMaps.NONE))
                    .as(spelling).extracting(FieldError::message).anySatisfy(m -> assertThat(m).startsWith(
                            "spec.containers[0](server).securityContext.capabilities.drop=[" + spelling + ", SYS_PTRACE] is "
                                    + "not allowed: must be a list with SYS_CHROOT and SYS_PTRACE (or ALL)"));
            Pod fixed = Pods.mutated(asked, false);
            assertThat(fixed.getSpec().getContainers().getFirst().getSecurityContext().getCapabilities().getDrop())
                    .as(spelling).contains(spelling, "SYS_CHROOT", "SYS_PTRACE");
        }
        // The bare name in any case, and ALL in any case, drop it on every runtime: nothing is added.
        for (String spelling : new String[] {"SYS_CHROOT", "sys_chroot", "Sys_Chroot", "ALL", "all"}) {
            Pod asked = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().withNewSecurityContext().withNewCapabilities()
                    .withDrop(spelling, "SYS_PTRACE").endCapabilities().endSecurityContext().endContainer().endSpec().build();
            assertThat(Pods.mutated(asked, false).getSpec().getContainers().getFirst().getSecurityContext()
                    .getCapabilities().getDrop()).as(spelling).containsExactly(spelling, "SYS_PTRACE");
        }

        // Added back, by any spelling, in any container: refused (the mutator leaves them for this refusal).
        for (String cap : new String[] {"SYS_CHROOT", "CAP_SYS_CHROOT", "sys_chroot", "CHROOT", "ALL", "SYS_PTRACE", "ptrace"}) {
            assertThat(errors(withSidecar(c -> c.withNewSecurityContext().withNewCapabilities().withAdd(cap).endCapabilities()
                    .endSecurityContext()))).as(cap).singleElement().asString()
                    .startsWith("spec.containers[1](sidecar).securityContext.capabilities.add[0]=" + cap + " is not allowed: must be "
                            + "none of ALL, SYS_ADMIN, SYS_PTRACE, SYS_CHROOT,");
        }
        Pod initChroot = Pods.gpuPod(30, 1024).editSpec().addNewInitContainer().withName("init").withImage("x")
                .withNewSecurityContext().withNewCapabilities().withAdd("SYS_CHROOT").endCapabilities().endSecurityContext()
                .endInitContainer().endSpec().build();
        assertThat(errors(initChroot)).singleElement().asString()
                .startsWith("spec.initContainers[0](init).securityContext.capabilities.add[0]=SYS_CHROOT is not allowed")
                .endsWith("(SYS_CHROOT: chroot: a root process runs programs under a tree without /etc/ld.so.preload, so without "
                        + "the hook)");
        Pod debugged = new PodBuilder(mutated).editSpec().addNewEphemeralContainer().withName("debug").withImage("x")
                .withNewSecurityContext().withNewCapabilities().withAdd("CAP_SYS_CHROOT").endCapabilities().endSecurityContext()
                .endEphemeralContainer().endSpec().build();
        assertThat(PodValidatorTest.ephemeral(mutated, debugged)).extracting(FieldError::message).singleElement().asString()
                .startsWith("spec.ephemeralContainers[0](debug).securityContext.capabilities.add[0]=CAP_SYS_CHROOT is not allowed");
        // An ephemeral container cannot drop anything before Kubernetes 1.23 (no securityContext at all): judged on what it adds.
        Pod plainDebug = new PodBuilder(mutated).editSpec().addNewEphemeralContainer().withName("debug").withImage("x")
                .endEphemeralContainer().endSpec().build();
        assertThat(PodValidatorTest.ephemeral(mutated, plainDebug)).isEmpty();
        // Pods without a share keep the runtime's defaults: Pod Security's business.
        Pod web = new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec().addNewContainer().withName("c")
                .withImage("x").withNewSecurityContext().withNewCapabilities().withAdd("SYS_CHROOT").endCapabilities()
                .endSecurityContext().endContainer().endSpec().build();
        assertThat(errors(web)).isEmpty();
    }
}
