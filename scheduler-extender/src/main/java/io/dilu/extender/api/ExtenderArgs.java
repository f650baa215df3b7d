package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
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

    /** The pod's namespace, name and UID; throws {@link InvalidRequest} naming the first one missing or malformed. */
    public PodRef podRef() {
        ObjectMeta meta = InvalidRequest.present(InvalidRequest.present(pod, "ExtenderArgs.Pod").getMetadata(),
                "ExtenderArgs.Pod.metadata");
        return new PodRef(InvalidRequest.name(meta.getNamespace(), "ExtenderArgs.Pod.metadata.namespace"),
                InvalidRequest.name(meta.getName(), "ExtenderArgs.Pod.metadata.name"),
                InvalidRequest.uid(meta.getUid(), "ExtenderArgs.Pod.metadata.uid"));
    }

    /**
     * The candidate nodes, whichever way the scheduler sent them; throws {@link InvalidRequest} when neither
     * {@code NodeNames} nor {@code Nodes} is there or a node has no valid name.
     */
    public List<String> candidates() {
        if (nodeNames != null) {
            for (int i = 0; i < nodeNames.size(); i++) {
                InvalidRequest.name(nodeNames.get(i), "ExtenderArgs.NodeNames[" + i + "]");
            }
            return nodeNames;
        }
        if (nodes == null) {
            throw new InvalidRequest("ExtenderArgs.NodeNames is missing (and so is Nodes): one of them must list the "
                    + "candidate nodes");
        }
        List<Node> items = InvalidRequest.present(nodes.getItems(), "ExtenderArgs.Nodes.items");
        List<String> names = new ArrayList<>(items.size());
        for (int i = 0; i < items.size(); i++) {
            String field = "ExtenderArgs.Nodes.items[" + i + "]";
            ObjectMeta meta = InvalidRequest.present(InvalidRequest.present(items.get(i), field).getMetadata(),
                    field + ".metadata");
            names.add(InvalidRequest.name(meta.getName(), field + ".metadata.name"));
        }
        return names;
    }
}
