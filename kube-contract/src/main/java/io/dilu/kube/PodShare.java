package io.dilu.kube;

import io.dilu.core.contract.AssignedGpus;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a pod asks of Dilu, read from its spec and annotations ({@link PodShares#of}).
 *
 * @param nodeName the node it is bound to, if any
 * @param terminal finished or being deleted: it holds nothing any more
 * @param function the function it serves (workload affinity)
 * @param containers its containers that request {@code dilu.io/gpu-sm}, in pod order
 */
public record PodShare(String uid, String namespace, String name, Optional<String> nodeName, boolean terminal,
        String function, Map<String, String> annotations, List<Container> containers) {

    public PodShare {
        annotations = Map.copyOf(annotations);
        containers = List.copyOf(containers);
    }

    /**
     * One container's share.
     *
     * @param smPercent {@code dilu.io/gpu-sm}, 1..100
     * @param memoryMib {@code dilu.io/gpu-memory}, when given
     */
    public record Container(String name, int smPercent, Optional<Long> memoryMib) {}

    /** The scheduler's assignment, when the annotation is there and well-formed. */
    public Optional<AssignedGpus> assigned() {
        return AssignedGpus.from(annotations);
    }
}
