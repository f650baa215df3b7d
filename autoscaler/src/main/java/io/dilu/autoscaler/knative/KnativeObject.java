package io.dilu.autoscaler.knative;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.api.model.ObjectMeta;

/**
 * A namespaced Knative object with a typed spec and status: the fields this autoscaler reads and writes, every
 * other field ignored on reading. Status is written through the status subresource only, so a field of the
 * spec this model does not know is never sent back.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonPropertyOrder({"apiVersion", "kind", "metadata", "spec", "status"})
public abstract class KnativeObject<S, T> implements HasMetadata, Namespaced {

    private String apiVersion;
    private String kind;
    private ObjectMeta metadata = new ObjectMeta();
    private S spec;
    private T status;

    protected KnativeObject(String apiVersion, String kind) {
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
