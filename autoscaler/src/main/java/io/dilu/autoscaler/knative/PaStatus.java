package io.dilu.autoscaler.knative;

import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ConditionBuilder;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The status a PodAutoscaler gets, as Knative's revision reconciler reads it: desired and actual scale, the
 * services, and the conditions Active, ScaleTargetInitialized and SKSReady, with Ready derived from them.
 */
public record PaStatus(int desiredScale, int actualScale, String serviceName, String metricsServiceName,
        boolean active, boolean scaleTargetInitialized, Boolean sksReady, long observedGeneration) {

    /** The status to write; a condition keeps its transition time while its status does not change. */
    public PodAutoscaler.Status build(PodAutoscaler.Status previous, Instant now) {
        String sks = sksReady == null ? "Unknown" : sksReady ? "True" : "False";
        boolean ready = active && scaleTargetInitialized && sksReady == Boolean.TRUE;
        List<Condition> conditions = List.of(
                condition("Active", active ? "True" : "False", active ? null : "NoTraffic",
                        active ? null : "The target is not receiving traffic.", previous, now),
                condition("ScaleTargetInitialized", scaleTargetInitialized ? "True" : "Unknown",
                        scaleTargetInitialized ? null : "Queued", null, previous, now),
                condition("SKSReady", sks, sksReady == Boolean.TRUE ? null : "NoHealthyBackends", null, previous, now),
                condition("Ready", ready ? "True" : !active ? "False" : "Unknown", ready ? null : !active ? "NoTraffic" : "Queued",
                        null, previous, now));
        return new PodAutoscaler.Status(observedGeneration, conditions, serviceName, metricsServiceName, desiredScale, actualScale);
    }

    private static Condition condition(String type, String status, String reason, String message,
            PodAutoscaler.Status previous, Instant now) {
        String since = Optional.ofNullable(previous).map(PodAutoscaler.Status::conditions).orElse(List.of()).stream()
                .filter(c -> type.equals(c.getType()) && status.equals(c.getStatus())).findFirst()
                .map(Condition::getLastTransitionTime).orElse(now.toString());
        return new ConditionBuilder().withType(type).withStatus(status).withLastTransitionTime(since).withReason(reason)
                .withMessage(message).build();
    }
}
