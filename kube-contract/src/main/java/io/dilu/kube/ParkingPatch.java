package io.dilu.kube;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.core.contract.DiluNames;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The writes of parking on a pod, for the autoscaler (park, wake) and the scheduler extender (the wake's answer, the
 * serving condition): JSON merge patches of the annotations ({@link DiluNames#PARKED}, {@link DiluNames#WAKE}, {@link
 * DiluNames#WAKE_FAILED}), which name the pod's UID so that a pod re-created under the same name is refused (the API
 * server checks a UID in the patched object against the stored one), and strategic merge patches of {@code pods/status}
 * that set the one condition {@link DiluNames#SERVING_CONDITION} (conditions merge by type; the kubelet keeps a
 * condition it does not own).
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

    /** {@code pods/status}: {@link DiluNames#SERVING_CONDITION} true (may serve) or false (parked), since {@code now}. */
    public static String servingCondition(boolean serving, String reason, String message, Instant now) {
        Map<String, Object> condition = new LinkedHashMap<>();
        condition.put("type", DiluNames.SERVING_CONDITION);
        condition.put("status", serving ? "True" : "False");
        condition.put("reason", reason);
        condition.put("message", message);
        condition.put("lastTransitionTime", now.toString());
        return write(Map.of("status", Map.of("conditions", List.of(condition))));
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
