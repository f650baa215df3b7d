package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;

/**
 * What kube-scheduler sends to filter and prioritize ({@code k8s.io/kube-scheduler/extender/v1.ExtenderArgs}).
 * The Go type has no JSON tags, so the wire names are its field names. With {@code nodeCacheCapable: true}
 * only {@code NodeNames} is filled.
 */
public record ExtenderArgs(
        @JsonProperty("Pod") Pod pod,
        @JsonProperty("Nodes") NodeList nodes,
        @JsonProperty("NodeNames") List<String> nodeNames) {

    /** The candidate nodes, whichever way the scheduler sent them. */
    public List<String> candidates() {
        if (nodeNames != null) {
            return nodeNames;
        }
        if (nodes != null && nodes.getItems() != null) {
            return nodes.getItems().stream().map(n -> n.getMetadata().getName()).toList();
        }
        return List.of();
    }
}
