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
import java.util.Optional;

/**
 * Knative's ServerlessService (networking.internal.knative.dev/v1alpha1): the autoscaler owns its spec, Knative's
 * networking reconciler its status. {@code Serve} routes to the revision's pods, {@code Proxy} through the
 * activator, which holds requests while the revision is at zero.
 */
@Group(KnativeNames.SERVERLESSSERVICE_GROUP)
@Version(KnativeNames.INTERNAL_VERSION)
@Kind(KnativeNames.SERVERLESSSERVICE_KIND)
@Plural("serverlessservices")
@JsonDeserialize(using = JsonDeserializer.None.class)
public final class ServerlessService extends TypedResource<ServerlessService.Spec, ServerlessService.Status> {

    public static final String SERVE = "Serve";
    public static final String PROXY = "Proxy";

    public ServerlessService() {
        super(KnativeNames.SERVERLESSSERVICE_API_VERSION, KnativeNames.SERVERLESSSERVICE_KIND);
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Spec(String mode, Integer numActivators, ObjectReference objectRef, String protocolType) {}

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Status(Long observedGeneration, List<Condition> conditions, String serviceName, String privateServiceName) {}

    /** The Ready condition: TRUE, FALSE, or null while unknown. */
    public Boolean ready() {
        Optional<Condition> c = Optional.ofNullable(getStatus()).map(Status::conditions).orElse(List.of()).stream()
                .filter(x -> "Ready".equals(x.getType())).findFirst();
        return c.map(x -> "True".equals(x.getStatus()) ? Boolean.TRUE : "False".equals(x.getStatus()) ? Boolean.FALSE : null)
                .orElse(null);
    }
}
