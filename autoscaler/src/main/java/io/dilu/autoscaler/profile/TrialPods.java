package io.dilu.autoscaler.profile;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * The pod that runs one profiling trial, and what its status says: pure functions of the profile and the pod.
 *
 * <p>A trial pins its share: request = limit = the trial's SM percent (no room for vertical scaling, so the
 * token manager gives it exactly that), and {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE} the same where MPS
 * runs. The workload measures itself and writes a {@link TrialReport} line to its termination message, which
 * the kubelet copies into the pod's status (at most 4 KiB): the profiler needs no access to logs.
 */
public final class TrialPods {

    /** Label on every trial pod, so that one watch sees them all. */
    public static final String ROLE_LABEL = "dilu.io/role";
    public static final String ROLE = "profiling-trial";
    /** Annotation naming the profile a trial pod belongs to. */
    public static final String TRIAL_OF = "dilu.io/trial-of";
    static final String CONTAINER = "trial";
    static final String TERMINATION_LOG = "/dev/termination-log";
    static final String MPS_PERCENTAGE = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
    /** Why a container cannot start that another attempt of the same pod will not mend. */
    static final Set<String> FATAL_WAITING = Set.of("ErrImagePull", "ImagePullBackOff", "InvalidImageName",
            "ErrImageNeverPull", "CreateContainerConfigError");

    private TrialPods() {}

    /** The pod's name: the profile's, the setting and the attempt, within the 253 characters a name may have. */
    public static String name(String profile, int smPercent, int batchSize, int attempt) {
        String suffix = "-sm" + smPercent + "-b" + batchSize + "-" + attempt;
        return (profile.length() + suffix.length() > 253 ? profile.substring(0, 253 - suffix.length()) : profile) + suffix;
    }

    /**
     * The pod for one attempt at one setting; owned by the profile, so deleting the profile deletes it.
     *
     * @param memoryMib the GPU memory it may use: a whole GPU's, since the trial is to find out how much it needs
     */
    public static Pod pod(GpuFunctionProfile profile, int smPercent, int batchSize, int attempt, Duration timeout, long memoryMib) {
        ProfileSpec spec = profile.getSpec();
        String sm = Integer.toString(smPercent);
        ContainerBuilder container = new ContainerBuilder().withName(CONTAINER).withImage(spec.image())
                .withEnv(new EnvVar(TrialReport.BATCH_SIZE_ENV, Integer.toString(batchSize), null),
                        new EnvVar(TrialReport.RESULT_ENV, TERMINATION_LOG, null),
                        new EnvVar(MPS_PERCENTAGE, sm, null))
                .withTerminationMessagePath(TERMINATION_LOG).withTerminationMessagePolicy("File")
                .withNewResources().withLimits(Map.of(DiluNames.GPU_SM, new Quantity(sm),
                        DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)))).endResources();
        if (spec.command() != null && !spec.command().isEmpty()) {
            container.withCommand(spec.command());
        }
        return new PodBuilder().withNewMetadata()
                .withName(name(profile.getMetadata().getName(), smPercent, batchSize, attempt))
                .withNamespace(profile.getMetadata().getNamespace())
                .withLabels(Map.of(ROLE_LABEL, ROLE))
                .withAnnotations(Map.of(TRIAL_OF, profile.getMetadata().getName(), DiluNames.SM_LIMIT, sm,
                        DiluNames.FUNCTION, spec.function()))
                .withOwnerReferences(new OwnerReferenceBuilder().withApiVersion(profile.getApiVersion()).withKind(profile.getKind())
                        .withName(profile.getMetadata().getName()).withUid(profile.getMetadata().getUid())
                        .withController(true).withBlockOwnerDeletion(false).build())
                .endMetadata()
                                // A trial needs no API access: no service account token in it.
                .withNewSpec().withRestartPolicy("Never").withActiveDeadlineSeconds(Math.max(1, timeout.toSeconds()))
                .withAutomountServiceAccountToken(false)
                .withContainers(container.build()).endSpec().build();
    }

    /** What a trial pod's status says so far. */
    public sealed interface Outcome permits Running, Measured, Retry, Fatal {}

    /** Not finished. */
    public record Running() implements Outcome {}

    /** It ran and reported. */
    public record Measured(TrialReport report, String node) implements Outcome {}

    /** It failed in a way another attempt may not (the container exited non-zero, the pod was evicted). */
    public record Retry(String reason) implements Outcome {}

    /** It cannot succeed: its image does not pull, or its report breaks the contract. */
    public record Fatal(String reason) implements Outcome {}

    /** The outcome of a trial pod, from its status only. */
    public static Outcome outcome(Pod pod) {
        var status = pod.getStatus();
        if (status == null) {
            return new Running();
        }
        ContainerStatus trial = status.getContainerStatuses() == null ? null : status.getContainerStatuses().stream()
                .filter(c -> CONTAINER.equals(c.getName())).findFirst().orElse(null);
        var waiting = trial == null || trial.getState() == null ? null : trial.getState().getWaiting();
        if (waiting != null && FATAL_WAITING.contains(waiting.getReason())) {
            return new Fatal(waiting.getReason() + ": " + clip(waiting.getMessage()));
        }
        var terminated = trial == null || trial.getState() == null ? null : trial.getState().getTerminated();
        if ("Succeeded".equals(status.getPhase())) {
            try {
                return new Measured(TrialReport.parse(terminated == null ? null : terminated.getMessage()),
                        pod.getSpec() == null ? null : pod.getSpec().getNodeName());
            } catch (IllegalArgumentException e) {
                return new Fatal("BadTrialReport: " + e.getMessage());
            }
        }
        if ("Failed".equals(status.getPhase())) {
            if (terminated != null) {
                return new Retry("exit code " + terminated.getExitCode()
                        + (terminated.getReason() == null ? "" : " (" + terminated.getReason() + ")")
                        + (terminated.getMessage() == null ? "" : ": " + clip(terminated.getMessage())));
            }
            return new Retry(status.getReason() == null ? "pod failed" : status.getReason() + ": " + clip(status.getMessage()));
        }
        return new Running();
    }

    /** Text from a pod (tenant-written) quoted in a status: one line, bounded. */
    static String clip(String s) {
        return TrialReport.quoted(s, 200);
    }
}
