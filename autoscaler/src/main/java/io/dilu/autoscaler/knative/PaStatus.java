package io.dilu.autoscaler.knative;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The status a PodAutoscaler gets, as Knative's revision reconciler reads it: desired and actual scale, the
 * services, and the conditions Active, ScaleTargetInitialized and SKSReady, with Ready derived from them.
 */
public record PaStatus(int desiredScale, int actualScale, String serviceName, String metricsServiceName,
        boolean active, boolean scaleTargetInitialized, Boolean sksReady, long observedGeneration) {

    /** The status as the API object wants it; a condition keeps its transition time while it does not change. */
    public Map<String, Object> toMap(Map<String, Object> previous, Instant now) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("observedGeneration", observedGeneration);
        s.put("desiredScale", desiredScale);
        s.put("actualScale", actualScale);
        s.put("serviceName", serviceName);
        s.put("metricsServiceName", metricsServiceName);
        List<Map<String, Object>> conditions = new ArrayList<>();
        conditions.add(condition("Active", active ? "True" : "False", active ? null : "NoTraffic",
                active ? null : "The target is not receiving traffic.", previous, now));
        conditions.add(condition("ScaleTargetInitialized", scaleTargetInitialized ? "True" : "Unknown",
                scaleTargetInitialized ? null : "Queued", null, previous, now));
        String sks = sksReady == null ? "Unknown" : sksReady ? "True" : "False";
        conditions.add(condition("SKSReady", sks, sksReady == Boolean.TRUE ? null : "NoHealthyBackends", null, previous, now));
        boolean ready = active && scaleTargetInitialized && sksReady == Boolean.TRUE;
        String readyStatus = ready ? "True" : !active ? "False" : "Unknown";
        conditions.add(condition("Ready", readyStatus, ready ? null : !active ? "NoTraffic" : "Queued", null, previous, now));
        s.put("conditions", conditions);
        return s;
    }

    private static Map<String, Object> condition(String type, String status, String reason, String message,
            Map<String, Object> previous, Instant now) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("type", type);
        c.put("status", status);
        c.put("lastTransitionTime", previousTransition(type, status, previous).orElse(now.toString()));
        if (reason != null) {
            c.put("reason", reason);
        }
        if (message != null) {
            c.put("message", message);
        }
        return c;
    }

    @SuppressWarnings("unchecked")
    private static java.util.Optional<String> previousTransition(String type, String status, Map<String, Object> previous) {
        if (previous == null || !(previous.get("conditions") instanceof List<?> list)) {
            return java.util.Optional.empty();
        }
        for (Object o : list) {
            if (o instanceof Map<?, ?> m && type.equals(m.get("type")) && status.equals(m.get("status"))) {
                return java.util.Optional.ofNullable((String) ((Map<String, Object>) m).get("lastTransitionTime"));
            }
        }
        return java.util.Optional.empty();
    }
}
