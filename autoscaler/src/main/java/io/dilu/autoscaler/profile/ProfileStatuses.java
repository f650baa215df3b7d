package io.dilu.autoscaler.profile;

import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ConditionBuilder;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The statuses the profiler writes: pure functions of what it found, the previous status and the time. Every
 * condition has a message: an empty one reached the API server as null, which the schema refuses.
 */
final class ProfileStatuses {

    private ProfileStatuses() {}

    /**
     * The settings a finished search chose.
     *
     * @param servingThroughputRps at the request; null for training (not served)
     * @param servingThroughputRpsAtLimit at the limit, same batch; null for training, or when the trial there failed
     */
    record Chosen(int smRequest, int smLimit, int batchSize, long memoryMiB, Double servingThroughputRps,
            Double servingThroughputRpsAtLimit, int searchTrials) {}

    static ProfileStatus profiling(long generation, List<TrialRecord> trials, String message, ProfileStatus previous, Instant now) {
        return new ProfileStatus(generation, conditions(generation, previous, now,
                condition(GpuFunctionProfile.PROFILING, "True", "TrialsRunning", message),
                condition(GpuFunctionProfile.READY, "False", "Profiling", "trials are running"),
                condition(GpuFunctionProfile.FAILED, "False", "Profiling", "no trial has failed for good")),
                null, null, null, null, null, null, null, List.copyOf(trials));
    }

    /** Not profiled yet, and why not (its namespace's quota, say); the trials so far kept. */
    static ProfileStatus waiting(long generation, List<TrialRecord> trials, String reason, String message, ProfileStatus previous,
            Instant now) {
        return new ProfileStatus(generation, conditions(generation, previous, now,
                condition(GpuFunctionProfile.PROFILING, "False", reason, message),
                condition(GpuFunctionProfile.READY, "False", reason, message),
                condition(GpuFunctionProfile.FAILED, "False", reason, message)),
                null, null, null, null, null, null, null, List.copyOf(trials));
    }

    static ProfileStatus ready(long generation, List<TrialRecord> trials, Chosen c, ProfileStatus previous, Instant now) {
        String message = "SM " + c.smRequest() + "% (limit " + c.smLimit() + "%), batch " + c.batchSize() + ", after "
                + c.searchTrials() + " trials";
        return new ProfileStatus(generation, conditions(generation, previous, now,
                condition(GpuFunctionProfile.PROFILING, "False", "Profiled", message),
                condition(GpuFunctionProfile.READY, "True", "Profiled", message),
                condition(GpuFunctionProfile.FAILED, "False", "Profiled", message)),
                c.smRequest(), c.smLimit(), c.batchSize(), c.memoryMiB(), c.servingThroughputRps(), c.servingThroughputRpsAtLimit(),
                c.searchTrials(),
                List.copyOf(trials));
    }

    static ProfileStatus failed(long generation, List<TrialRecord> trials, String reason, String message, ProfileStatus previous,
            Instant now) {
        return new ProfileStatus(generation, conditions(generation, previous, now,
                condition(GpuFunctionProfile.PROFILING, "False", reason, message),
                condition(GpuFunctionProfile.READY, "False", reason, message),
                condition(GpuFunctionProfile.FAILED, "True", reason, message)),
                null, null, null, null, null, null, null, List.copyOf(trials));
    }

    private static Condition condition(String type, String status, String reason, String message) {
        return new ConditionBuilder().withType(type).withStatus(status).withReason(reason).withMessage(message).build();
    }

    /** The conditions, each keeping its previous transition time when its status did not change. */
    private static List<Condition> conditions(long generation, ProfileStatus previous, Instant now, Condition... conditions) {
        for (Condition c : conditions) {
            Optional<Condition> before = previous == null || previous.conditions() == null ? Optional.empty()
                    : previous.conditions().stream().filter(p -> c.getType().equals(p.getType())).findFirst();
            c.setLastTransitionTime(before.filter(b -> c.getStatus().equals(b.getStatus()) && b.getLastTransitionTime() != null)
                    .map(Condition::getLastTransitionTime).orElse(now.toString()));
            c.setObservedGeneration(generation);
        }
        return List.of(conditions);
    }
}
