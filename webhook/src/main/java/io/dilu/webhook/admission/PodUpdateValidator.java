package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.FieldError;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * What an UPDATE of a pod may change of its annotations. The quota annotations are fixed when the pod is
 * created (admission judged them then, and the node agent re-reads them), so are the seccomp annotations,
 * {@code dilu.io/assigned-gpus} is the scheduler extender's and the node agent's to write, and the parking annotations
 * ({@code dilu.io/parked}, {@code dilu.io/wake}, {@code dilu.io/wake-failed}) the autoscaler's and the extender's: a
 * tenant who unparked its own pod would ask the extender for a wake it did not need. A pure function of the two sets
 * of annotations and the requesting user.
 */
public final class PodUpdateValidator {

    /** Annotations no UPDATE may add, change or remove. */
    static final List<String> FIXED = List.of(DiluNames.PRIORITY, DiluNames.SM_LIMIT, DiluNames.KLC_THRESHOLD, DiluNames.LLM,
            DiluNames.BATCH_SIZE, DiluNames.FUNCTION, DiluNames.SPLIT, DiluNames.PROFILE);

    /** Annotations of parking, written by the autoscaler and the scheduler extender only. */
    static final List<String> PARKING = List.of(DiluNames.PARKED, DiluNames.WAKE, DiluNames.WAKE_FAILED);

    private PodUpdateValidator() {}

    /**
     * @param username the AdmissionReview's {@code userInfo.username}
     * @param writers the users that may change {@code dilu.io/assigned-gpus}
     * @param parkingWriters the users that may change the parking annotations
     */
    public static List<FieldError> validate(Map<String, String> before, Map<String, String> after, String username,
            Set<String> writers, Set<String> parkingWriters) {
        List<FieldError> errors = new ArrayList<>();
        for (String key : FIXED) {
            if (!Objects.equals(before.get(key), after.get(key))) {
                errors.add(new FieldError("metadata.annotations[" + key + "]", change(before.get(key), after.get(key)),
                        "unchanged: " + key + " is fixed when the pod is created (create a new pod to change it)"));
            }
        }
        // The kubelet reads the deprecated seccomp annotations whenever it starts a container (before the pod's
        // field, for a container's own), so a pod given RuntimeDefault must not be made unconfined afterwards.
        Set<String> seccomp = new TreeSet<>();
        for (Map<String, String> a : List.of(before, after)) {
            a.keySet().stream().filter(PodUpdateValidator::seccompAnnotation).forEach(seccomp::add);
        }
        for (String key : seccomp) {
            if (!Objects.equals(before.get(key), after.get(key))) {
                errors.add(new FieldError("metadata.annotations[" + PodValidator.clip(key) + "]", change(before.get(key), after.get(key)),
                        "unchanged: seccomp annotations are fixed when the pod is created (the kubelet reads them each time it "
                                + "starts a container)"));
            }
        }
        String assigned = DiluNames.ASSIGNED_GPUS;
        if (!Objects.equals(before.get(assigned), after.get(assigned)) && !writers.contains(username)) {
            errors.add(new FieldError("metadata.annotations[" + assigned + "]", change(before.get(assigned), after.get(assigned)),
                    "unchanged except by the scheduler extender and the node agent (" + String.join(", ", new TreeSet<>(writers))
                            + "), not by " + PodValidator.clip(username.isEmpty() ? "an unnamed user" : username)));
        }
        for (String key : PARKING) {
            if (!Objects.equals(before.get(key), after.get(key)) && !parkingWriters.contains(username)) {
                errors.add(new FieldError("metadata.annotations[" + key + "]", change(before.get(key), after.get(key)),
                        "unchanged except by the autoscaler and the scheduler extender (" + String.join(", ",
                                new TreeSet<>(parkingWriters)) + "), not by " + PodValidator.clip(username.isEmpty()
                                ? "an unnamed user" : username)));
            }
        }
        return errors;
    }

    private static boolean seccompAnnotation(String key) {
        return key.equals(Confinement.POD_SECCOMP_ANNOTATION) || key.startsWith(Confinement.CONTAINER_SECCOMP_ANNOTATION);
    }

    private static String change(String before, String after) {
        return shown(after) + " (was " + shown(before) + ")";
    }

    private static String shown(String value) {
        return value == null ? "absent" : PodValidator.clip(value);
    }
}
