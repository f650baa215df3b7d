package io.dilu.deviceplugin.agent;

import io.dilu.core.quota.Priority;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;

/**
 * One GPU share handed out by Allocate, as the agent remembers it (also on disk, beside its control block).
 *
 * @param gpu the GPU's UUID
 * @param deviceIds the {@code dilu.io/gpu-sm} device IDs the kubelet allocated: how the PodResources API
 *     names the share, and its size (SM request in percent)
 * @param owner the container, once known
 * @param smLimit SM limit in percent
 * @param klcThreshold the owner's KLC threshold ({@code dilu.io/klc-threshold}), NaN for the node's default
 * @param missingSince when the kubelet was first seen not to list the share any more
 */
public record Allocation(String id, String gpu, Set<String> deviceIds, Instant created, Optional<ContainerRef> owner,
        int smLimit, Priority priority, double klcThreshold, Optional<Instant> missingSince) {

    public Allocation {
        deviceIds = Set.copyOf(deviceIds);
    }

    public int smRequest() {
        return deviceIds.size();
    }

    public Allocation withOwner(ContainerRef owner, int smLimit, Priority priority, double klcThreshold) {
        return new Allocation(id, gpu, deviceIds, created, Optional.of(owner), smLimit, priority, klcThreshold,
                missingSince);
    }

    public Allocation withMissingSince(Optional<Instant> since) {
        return new Allocation(id, gpu, deviceIds, created, owner, smLimit, priority, klcThreshold, since);
    }

    /** Whether the quotas that come from the owner's annotations are the same. */
    boolean sameQuotas(int limit, Priority priority, double threshold) {
        return limit == smLimit && priority == this.priority && Double.compare(threshold, klcThreshold) == 0;
    }
}
