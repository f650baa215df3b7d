package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.QuotaRights;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
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
 * @param quota what the share runs with: from its pod once known, the defaults before
 * @param missingSince when the kubelet was first seen not to list the share any more
 */
public record Allocation(String id, String gpu, Set<String> deviceIds, Instant created, Optional<ContainerRef> owner,
        ShareQuota quota, Optional<Instant> missingSince) {

    /** GPU memory a share gets until its pod is known: what the scheduler extender books for a pod without one. */
    public static final long DEFAULT_MEMORY_MIB = 1024;

    public Allocation {
        deviceIds = Set.copyOf(deviceIds);
    }

    /**
     * The quota of a share.
     *
     * @param smLimit percent
     * @param klcThreshold NaN for the node's default
     * @param memoryMib the container's GPU memory share ({@code dilu.io/gpu-memory})
     */
    public record ShareQuota(int smLimit, Priority priority, double klcThreshold, long memoryMib) {

        /** A share whose pod is not known yet: best-effort, the default limit, the default memory. */
        public static ShareQuota defaults(int smRequest) {
            return new ShareQuota(Quota.defaultLimit(smRequest), Priority.BEST_EFFORT, Double.NaN, DEFAULT_MEMORY_MIB);
        }

        /** What the pod asks for, as far as its namespace has the right to ask (see {@link QuotaRights}). */
        public static ShareQuota of(PodView pod, PodView.GpuContainer container) {
            QuotaRights.PodQuota q = QuotaRights.grant(pod.annotations(), container.smRequest(), Priority.BEST_EFFORT,
                    pod.sloRight());
            return new ShareQuota(q.smLimit(), q.priority(), q.klcThreshold(), container.memoryMib());
        }

        /** Value equality that also treats two NaN thresholds as equal. */
        boolean same(ShareQuota o) {
            return smLimit == o.smLimit && priority == o.priority && Double.compare(klcThreshold, o.klcThreshold) == 0
                    && memoryMib == o.memoryMib;
        }
    }

    public int smRequest() {
        return deviceIds.size();
    }

    public int smLimit() {
        return quota.smLimit();
    }

    public Priority priority() {
        return quota.priority();
    }

    public double klcThreshold() {
        return quota.klcThreshold();
    }

    public long memoryMib() {
        return quota.memoryMib();
    }

    public Allocation withOwner(ContainerRef owner, ShareQuota quota) {
        return new Allocation(id, gpu, deviceIds, created, Optional.of(owner), quota, missingSince);
    }

    public Allocation withMissingSince(Optional<Instant> since) {
        return new Allocation(id, gpu, deviceIds, created, owner, quota, since);
    }
}
