package io.dilu.autoscaler.profile;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class TrialPodsTest {

    static GpuFunctionProfile profile(String name, ProfileSpec spec) {
        return new GpuFunctionProfile(new ObjectMetaBuilder().withName(name).withNamespace("fns").withUid("uid-1")
                .withGeneration(1L).build(), spec, null);
    }

    private static final GpuFunctionProfile BERT = profile("bert",
            ProfileSpec.toProfile("bert", "inference", "registry.local/bert:1", List.of("serve", "--trial"), 200, null));

    @Test
    void aTrialPodPinsItsShareAndTellsTheWorkloadWhereToReport() {
        Pod pod = TrialPods.pod(BERT, 30, 8, 1, Duration.ofMinutes(5), 40960);
        assertThat(pod.getMetadata().getName()).isEqualTo("bert-sm30-b8-1");
        assertThat(pod.getMetadata().getNamespace()).isEqualTo("fns");
        assertThat(pod.getMetadata().getLabels()).containsEntry(TrialPods.ROLE_LABEL, TrialPods.ROLE);
        assertThat(pod.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "30")
                .containsEntry(TrialPods.TRIAL_OF, "bert").containsEntry(DiluNames.FUNCTION, "bert");
        assertThat(pod.getMetadata().getOwnerReferences()).singleElement()
                .satisfies(o -> assertThat(o.getUid()).isEqualTo("uid-1"));
        var c = pod.getSpec().getContainers().getFirst();
        assertThat(c.getImage()).isEqualTo("registry.local/bert:1");
        assertThat(c.getCommand()).containsExactly("serve", "--trial");
        assertThat(c.getResources().getLimits().get(DiluNames.GPU_SM).toString()).isEqualTo("30");
        assertThat(c.getResources().getLimits().get(DiluNames.GPU_MEMORY).toString()).isEqualTo("40960");
        assertThat(c.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue))).isEqualTo(Map.of(
                TrialReport.BATCH_SIZE_ENV, "8", TrialReport.RESULT_ENV, "/dev/termination-log",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "30"));
        assertThat(pod.getSpec().getRestartPolicy()).isEqualTo("Never");
        assertThat(pod.getSpec().getAutomountServiceAccountToken()).isFalse();
        assertThat(pod.getSpec().getActiveDeadlineSeconds()).isEqualTo(300L);
        assertThat(TrialPods.name("x".repeat(300), 100, 1024, 2)).hasSize(253).endsWith("-sm100-b1024-2");
    }

    private static Pod withStatus(String phase, ContainerStatusBuilder container) {
        return new PodBuilder(TrialPods.pod(BERT, 30, 8, 0, Duration.ofMinutes(5), 40960)).editSpec().withNodeName("gpu-1").endSpec()
                .withNewStatus().withPhase(phase).withContainerStatuses(container.withName("trial").build()).endStatus().build();
    }

    @Test
    void theOutcomeIsReadFromThePodsStatus() {
        assertThat(TrialPods.outcome(TrialPods.pod(BERT, 30, 8, 0, Duration.ofMinutes(5), 40960))).isInstanceOf(TrialPods.Running.class);
        assertThat(TrialPods.outcome(withStatus("Succeeded", new ContainerStatusBuilder().withNewState().withNewTerminated()
                .withExitCode(0).withMessage("DILU_TRIAL latency_s=0.04 throughput_rps=200 memory_mib=3000\n").endTerminated().endState())))
                .isEqualTo(new TrialPods.Measured(new TrialReport(0.04, 200, 3000), "gpu-1"));
        assertThat(TrialPods.outcome(withStatus("Pending", new ContainerStatusBuilder().withNewState().withNewWaiting()
                .withReason("ImagePullBackOff").withMessage("Back-off pulling image \"nope:1\"").endWaiting().endState())))
                .isEqualTo(new TrialPods.Fatal("ImagePullBackOff: Back-off pulling image \"nope:1\""));
        assertThat(TrialPods.outcome(withStatus("Pending", new ContainerStatusBuilder().withNewState().withNewWaiting()
                .withReason("ContainerCreating").endWaiting().endState()))).isInstanceOf(TrialPods.Running.class);
        assertThat(TrialPods.outcome(withStatus("Failed", new ContainerStatusBuilder().withNewState().withNewTerminated()
                .withExitCode(137).withReason("OOMKilled").endTerminated().endState())))
                .isEqualTo(new TrialPods.Retry("exit code 137 (OOMKilled)"));
    }

    @Test
    void aReportThatBreaksTheContractFailsTheTrialWithoutEchoingItRaw() {
        var outcome = TrialPods.outcome(withStatus("Succeeded", new ContainerStatusBuilder().withNewState().withNewTerminated()
                .withExitCode(0).withMessage("DILU_TRIAL latency_s=-1 throughput_rps=1e300").endTerminated().endState()));
        assertThat(outcome).isInstanceOf(TrialPods.Fatal.class);
        assertThat(((TrialPods.Fatal) outcome).reason()).startsWith("BadTrialReport: latency_s must be a number in (0, 3600]");
        var failed = TrialPods.outcome(withStatus("Failed", new ContainerStatusBuilder().withNewState().withNewTerminated()
                .withExitCode(1).withMessage("line1\nline2\u0007" + "y".repeat(500)).endTerminated().endState()));
        assertThat(((TrialPods.Retry) failed).reason()).startsWith("exit code 1: line1 line2?yyy").hasSizeLessThan(230);
    }
}
