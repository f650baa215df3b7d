package io.dilu.autoscaler.knative;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.dilu.core.contract.KnativeNames;
import io.dilu.kube.TypedResource;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Knative's PodAutoscaler (autoscaling.internal.knative.dev/v1alpha1), as Knative's revision reconciler writes it. */
@Group(KnativeNames.PODAUTOSCALER_GROUP)
@Version(KnativeNames.INTERNAL_VERSION)
@Kind(KnativeNames.PODAUTOSCALER_KIND)
@Plural("podautoscalers")
// HasMetadata's own deserializer looks types up by kind; this class is its own type.
@JsonDeserialize(using = JsonDeserializer.None.class)
public final class PodAutoscaler extends TypedResource<PodAutoscaler.Spec, PodAutoscaler.Status> {

    public PodAutoscaler() {
        super(KnativeNames.PODAUTOSCALER_API_VERSION, KnativeNames.PODAUTOSCALER_KIND);
    }

    /**
     * @param scaleTargetRef what is scaled (a Deployment)
     * @param containerConcurrency the revision's hard concurrency limit (0: none)
     * @param protocolType http1 or h2c, handed to the ServerlessService
     * @param reachability Reachable, Unreachable or empty
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Spec(ObjectReference scaleTargetRef, Long containerConcurrency, String protocolType, String reachability) {}

    /** What the autoscaler reports: Knative's revision reconciler reads the scales and the conditions. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Status(Long observedGeneration, List<Condition> conditions, String serviceName, String metricsServiceName,
            Integer desiredScale, Integer actualScale) {}

    /** The annotations, never null. */
    public Map<String, String> annotations() {
        return Optional.ofNullable(getMetadata().getAnnotations()).orElse(Map.of());
    }

    /** The labels, never null. */
    public Map<String, String> labels() {
        return Optional.ofNullable(getMetadata().getLabels()).orElse(Map.of());
    }

    /** The PodAutoscaler class, Knative's own ({@link Knative#KPA_CLASS}) when none is written. */
    public String paClass() {
        return annotations().getOrDefault(KnativeNames.CLASS, KnativeNames.KPA_CLASS);
    }
}
