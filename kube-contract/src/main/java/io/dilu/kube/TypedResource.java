package io.dilu.kube;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.api.model.ObjectMeta;

/**
 * A namespaced custom resource with a typed spec and status, for fabric8's typed clients and informers: the
 * fields a component reads and writes, every other field ignored on reading (so a component writes a status
 * through the status subresource only, and never sends back a spec it does not know in full). Subclasses name
 * the resource (fabric8's {@code @Group}, {@code @Version}, {@code @Kind}, {@code @Plural}) and say that Jackson
 * deserializes them as themselves ({@code @JsonDeserialize(using = JsonDeserializer.None.class)}): HasMetadata's
 * own deserializer looks types up by kind.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonPropertyOrder({"apiVersion", "kind", "metadata", "spec", "status"})
public abstract class TypedResource<S, T> implements HasMetadata, Namespaced {

    private String apiVersion;
    private String kind;
    private ObjectMeta metadata = new ObjectMeta();
    private S spec;
    private T status;

    protected TypedResource(String apiVersion, String kind) {
        this.apiVersion = apiVersion;
        this.kind = kind;
    }

    @Override
    public String getApiVersion() {
        return apiVersion;
    }

    @Override
    public void setApiVersion(String apiVersion) {
        this.apiVersion = apiVersion;
    }

    @Override
    public String getKind() {
        return kind;
    }

    public void setKind(String kind) {
        this.kind = kind;
    }

    @Override
    public ObjectMeta getMetadata() {
        return metadata;
    }

    @Override
    public void setMetadata(ObjectMeta metadata) {
        this.metadata = metadata;
    }

    public S getSpec() {
        return spec;
    }

    public void setSpec(S spec) {
        this.spec = spec;
    }

    public T getStatus() {
        return status;
    }

    public void setStatus(T status) {
        this.status = status;
    }

    /** namespace/name, the key of informers' stores. */
    public String key() {
        return metadata.getNamespace() + "/" + metadata.getName();
    }
}
