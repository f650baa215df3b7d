package io.dilu.kube;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.PodCondition;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The writes of parking on a pod, for the autoscaler (park, wake) and the scheduler extender (the wake's answer, the
 * serving condition): JSON merge patches of the annotations ({@link DiluNames#PARKED}, {@link DiluNames#WAKE}, {@link
 * DiluNames#WAKE_FAILED}), which name the pod's UID so that a pod re-created under the same name is refused (the API
 * server checks a UID in the patched object against the stored one), and JSON Patches of {@code pods/status} that set
 * the one condition {@link DiluNames#SERVING_CONDITION} where the pod has it, testing that it is still there (the
 * kubelet keeps a condition it does not own, and rewrites its own beside it), so no other condition is touched.
 */
public final class ParkingPatch {

    private static final ObjectMapper JSON = new ObjectMapper();

    private ParkingPatch() {}

    /** Parked at {@code now}: any earlier wake or its answer goes. */
    public static String park(String uid, Instant now) {
        return annotations(uid, DiluNames.PARKED, now.toString(), DiluNames.WAKE, null, DiluNames.WAKE_FAILED, null);
    }

    /** Asked to serve again at {@code now}: no longer parked, a wake for the extender to answer. */
    public static String wake(String uid, Instant now) {
        return annotations(uid, DiluNames.PARKED, null, DiluNames.WAKE, now.toString());
    }

    /** The wake is answered: the pod's SM request is booked again. */
    public static String woken(String uid) {
        return annotations(uid, DiluNames.WAKE, null);
    }

    /** The wake is answered: no room, for this reason; the pod stays booked at its memory. */
    public static String wakeFailed(String uid, String reason) {
        return annotations(uid, DiluNames.WAKE, null, DiluNames.WAKE_FAILED, reason);
    }

    /**
     * {@code pods/status}: {@link DiluNames#SERVING_CONDITION} True (may serve) or False (parked), since {@code now}, for
     * the pod {@code uid} whose conditions are {@code current}. The UID is tested first, so that a pod re-created under
     * the name is not written for the one the caller decided on; the condition is replaced where it is (tested too: a
     * condition list rewritten since fails the patch, and the caller retries from a fresh copy), added after the others
     * where it is not.
     */
    public static String servingCondition(String uid, List<PodCondition> current, boolean serving, String reason,
            String message, Instant now) {
        Map<String, Object> condition = new LinkedHashMap<>();
        condition.put("type", DiluNames.SERVING_CONDITION);
        condition.put("status", serving ? "True" : "False");
        condition.put("reason", reason);
        condition.put("message", message);
        condition.put("lastTransitionTime", now.toString());
        Map<String, Object> sameUid = op("test", "/metadata/uid", uid);
        if (current == null || current.isEmpty()) {
            return write(List.of(sameUid, op("add", "/status/conditions", List.of(condition))));
        }
        for (int i = 0; i < current.size(); i++) {
            if (DiluNames.SERVING_CONDITION.equals(current.get(i).getType())) {
                return write(List.of(sameUid, op("test", "/status/conditions/" + i + "/type", DiluNames.SERVING_CONDITION),
                        op("replace", "/status/conditions/" + i, condition)));
            }
        }
        return write(List.of(sameUid, op("add", "/status/conditions/-", condition)));
    }

    /** One JSON Patch operation, its members in the RFC's order. */
    private static Map<String, Object> op(String op, String path, Object value) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("op", op);
        o.put("path", path);
        o.put("value", value);
        return o;
    }

    /** A merge patch of annotations, key and value in turn; a null value removes the key. */
    private static String annotations(String uid, String... keysAndValues) {
        Map<String, String> annotations = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            annotations.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("uid", uid);
        metadata.put("annotations", annotations);
        return write(Map.of("metadata", metadata));
    }

    private static String write(Object patch) {
        try {
            return JSON.writeValueAsString(patch);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("a map of strings is always JSON", e);
        }
    }
}
