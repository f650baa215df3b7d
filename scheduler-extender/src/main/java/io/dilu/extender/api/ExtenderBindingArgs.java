package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/** What kube-scheduler sends to bind a pod through the extender. */
public record ExtenderBindingArgs(
        @JsonProperty("PodName") String podName,
        @JsonProperty("PodNamespace") String podNamespace,
        @JsonProperty("PodUID") String podUid,
        @JsonProperty("Node") String node) {

    /** The pod to bind; throws {@link InvalidRequest} naming the first field missing or malformed. */
    public PodRef podRef() {
        return new PodRef(InvalidRequest.name(podNamespace, "ExtenderBindingArgs.PodNamespace"),
                InvalidRequest.name(podName, "ExtenderBindingArgs.PodName"),
                InvalidRequest.uid(podUid, "ExtenderBindingArgs.PodUID"));
    }

    /** The node to bind to; throws {@link InvalidRequest} when it is missing or not a node name. */
    public String target() {
        return InvalidRequest.name(node, "ExtenderBindingArgs.Node");
    }
}
