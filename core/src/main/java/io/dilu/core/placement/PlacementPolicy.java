package io.dilu.core.placement;

/**
 * Decides where an instance goes given the cluster as it is. A policy only reads the state; the caller
 * applies a {@link PlacementDecision.Placed} with {@link ClusterState#apply} once the placement is committed
 * (in the cluster: once the pod is bound).
 */
public interface PlacementPolicy {

    /** A short name for reports, e.g. {@code dilu}. */
    String name();

    PlacementDecision decide(ClusterState state, InstanceRequest request);

}
