package io.dilu.kube;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a pod asks of Dilu, read from its spec and annotations ({@link PodShares#of}).
 *
 * @param nodeName the node it is bound to, if any
 * @param terminal finished, or deleted with nothing left running ({@link PodShares#terminal}): it holds nothing
 *     any more
 * @param function the function it serves, within its namespace ({@code namespace/function}): the key of workload
 *     affinity and of the rule for a function's replicas on one GPU
 * @param containers its containers that request {@code dilu.io/gpu-sm}, in pod order
 * @param servingGate it declares a readiness gate on {@link DiluNames#SERVING_CONDITION}: it is ready only while that
 *     condition is true, which the scheduler extender sets at bind and at a wake
 * @param lastKept that condition is True with {@link DiluNames#SERVING_KEPT_REASON}: parked, it is the last instance
 *     of a revision that may not reach zero, kept in the request path ({@link PodShares#kept})
 */
public record PodShare(String uid, String namespace, String name, Optional<String> nodeName, boolean terminal,
        String function, Map<String, String> annotations, List<Container> containers, boolean servingGate,
        boolean lastKept) {

    public PodShare {
        annotations = Map.copyOf(annotations);
        containers = List.copyOf(containers);
    }

    /** A pod not kept in the request path as its revision's last instance. */
    public PodShare(String uid, String namespace, String name, Optional<String> nodeName, boolean terminal,
            String function, Map<String, String> annotations, List<Container> containers, boolean servingGate) {
        this(uid, namespace, name, nodeName, terminal, function, annotations, containers, servingGate, false);
    }

    /** Parked, and kept in the request path as the last instance of a revision that may not reach zero. */
    public boolean parkedKept() {
        return parked() && lastKept;
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

    /** Parked by the autoscaler ({@link DiluNames#PARKED}): kept warm, its SM booking given back. */
    public boolean parked() {
        return annotations.containsKey(DiluNames.PARKED);
    }

    /** When it was parked, from {@link DiluNames#PARKED}; the epoch when that is not an RFC 3339 time. */
    public Instant parkedAt() {
        try {
            return Instant.parse(annotations.getOrDefault(DiluNames.PARKED, ""));
        } catch (DateTimeException e) {
            return Instant.EPOCH;
        }
    }

    /** The autoscaler asked the parked pod to serve again ({@link DiluNames#WAKE}) and no answer is written yet. */
    public boolean wakeAsked() {
        return annotations.containsKey(DiluNames.WAKE) && !parked() && !wakeFailed();
    }

    /** Its wake found no room ({@link DiluNames#WAKE_FAILED}): it stays booked at its memory until it is deleted. */
    public boolean wakeFailed() {
        return annotations.containsKey(DiluNames.WAKE_FAILED);
    }
}
