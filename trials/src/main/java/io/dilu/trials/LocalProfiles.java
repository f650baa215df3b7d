package io.dilu.trials;

import io.dilu.core.profiling.InferenceProfile;
import io.dilu.core.profiling.TrainingProfile;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ConditionBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.List;
import java.util.Optional;

/**
 * What a local profiling found, as the GpuFunctionProfile the profiler on Kubernetes would have written for the same
 * trials: the spec {@code ./dilu profile --function} asks with ({@link EmulatedModel#profileSpec}), a status with the
 * settings, both serving rates, every trial in the order run (labelled with the emulated GPU) and the conditions.
 * No time stamps: the same trials give the same file.
 */
final class LocalProfiles {

    /** The GPU every local trial runs on: the emulator's defaults, as ProcessTrial gives each trial. */
    static final String GPU = "emulated A100-40GB";

    private LocalProfiles() {}

    /** An inference model: Ready with the search's choice, or Failed when no trial met the SLO. */
    static GpuFunctionProfile inference(EmulatedModel m, Optional<InferenceProfile> found, List<TrialRun> runs) {
        List<TrialRecord> trials = records(runs);
        if (found.isEmpty()) {
            String why = "no setting tried executes a batch within half the SLO (" + m.sloSeconds() * 500 + " ms); trials: "
                    + runs.size();
            return resource(m, new ProfileStatus(null, conditions("False", "NoSettingMeetsSlo", why), null, null, null, null,
                    null, null, null, trials));
        }
        InferenceProfile p = found.get();
        long memory = runs.stream().filter(r -> r.smPercent() == p.smRequest() && r.batchSize() == p.batchSize())
                .flatMap(r -> r.report().stream()).mapToLong(r -> r.memoryMib()).max().orElse(0);
        return resource(m, new ProfileStatus(null, conditions("True", "Profiled", ready(p.smRequest(), p.smLimit(), p.batchSize(),
                p.trials())), p.smRequest(), p.smLimit(), p.batchSize(), memory > 0 ? memory : null, p.servingThroughput(),
                Double.isNaN(p.servingThroughputAtLimit()) ? null : p.servingThroughputAtLimit(), p.trials(), trials));
    }

    /** The training job: Ready with the request and limit; iterations per second are not a serving rate. */
    static GpuFunctionProfile training(EmulatedModel m, TrainingProfile p, List<TrialRun> runs) {
        long memory = runs.stream().flatMap(r -> r.report().stream()).mapToLong(r -> r.memoryMib()).max().orElse(0);
        return resource(m, new ProfileStatus(null, conditions("True", "Profiled", ready(p.smRequest(), p.smLimit(), 1, p.trials())),
                p.smRequest(), p.smLimit(), 1, memory > 0 ? memory : null, null, null, p.trials(), records(runs)));
    }

    /** The comment a written profile starts with. */
    static String comment(EmulatedModel m) {
        return "# " + m.name() + " as ./dilu profile --local found it: every trial a run of the workload on the emulated GPU\n"
                + "# (not a GPU measurement), Hybrid Growth Search's, then one at the chosen limit and batch.\n"
                + "# The model: " + m.basis() + "\n";
    }

    private static GpuFunctionProfile resource(EmulatedModel m, ProfileStatus status) {
        return new GpuFunctionProfile(new ObjectMetaBuilder().withName(m.name()).build(), m.profileSpec(), status);
    }

    private static List<TrialRecord> records(List<TrialRun> runs) {
        return runs.stream().map(r -> r.report().map(t -> new TrialRecord(r.smPercent(), r.batchSize(), t.latencySeconds() * 1000,
                        t.throughput(), t.memoryMib(), null, GPU, null))
                .orElse(new TrialRecord(r.smPercent(), r.batchSize(), null, null, null, null, GPU, r.failure()))).toList();
    }

    private static String ready(int request, int limit, int batch, int trials) {
        return "SM " + request + "% (limit " + limit + "%), batch " + batch + ", after " + trials + " trials";
    }

    /** Ready (or Failed) as the profiler words its conditions. */
    private static List<Condition> conditions(String ready, String reason, String message) {
        String failed = ready.equals("True") ? "False" : "True";
        return List.of(condition(GpuFunctionProfile.PROFILING, "False", reason, message),
                condition(GpuFunctionProfile.READY, ready, reason, message),
                condition(GpuFunctionProfile.FAILED, failed, reason, message));
    }

    private static Condition condition(String type, String status, String reason, String message) {
        return new ConditionBuilder().withType(type).withStatus(status).withReason(reason).withMessage(message).build();
    }
}
