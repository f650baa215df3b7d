package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.QuotaRights;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One GPU share handed out by Allocate, as the agent remembers it (also on disk, beside its control block).
 *
 * @param gpu the GPU's UUID; for a container split into pipeline stages, the first of its GPUs in the node's
 *     order (each of them is a device of its control block, in that order)
 * @param deviceIds the {@code dilu.io/gpu-sm} device IDs the kubelet allocated: how the PodResources API
 *     names the share, and its size (SM request in percent); a split container's lie on several GPUs
 * @param owner the container, once known
 * @param quota what the share runs with: from its pod once known, the defaults before
 * @param missingSince when the kubelet was first seen not to list the share any more
 */
public record Allocation(String id, String gpu, Set<String> deviceIds, Instant created, Optional<ContainerRef> owner,
        ShareQuota quota, Optional<Instant> missingSince) {

    public Allocation {
        deviceIds = Set.copyOf(deviceIds);
    }

    /**
     * The quota of a share.
     *
     * @param smLimit percent
     * @param klcThreshold NaN for the node's default
     * @param memoryMib the container's GPU memory share ({@code dilu.io/gpu-memory})
     * @param stageMemoryMib for a split container, the memory of each stage by GPU UUID, from its pod's
     *     {@code dilu.io/assigned-gpus} when the stages add up to {@code memoryMib}; else empty (memory is then
     *     divided like the SM share)
     */
    public record ShareQuota(int smLimit, Priority priority, double klcThreshold, long memoryMib,
            Map<String, Long> stageMemoryMib) {

        public ShareQuota {
            stageMemoryMib = Map.copyOf(stageMemoryMib);
        }

        public ShareQuota(int smLimit, Priority priority, double klcThreshold, long memoryMib) {
            this(smLimit, priority, klcThreshold, memoryMib, Map.of());
        }

        /** A share whose pod is not known yet: best-effort, the default limit, the default memory. */
        public static ShareQuota defaults(int smRequest) {
            return new ShareQuota(Quota.defaultLimit(smRequest), Priority.BEST_EFFORT, Double.NaN, Quota.DEFAULT_MEMORY_MIB);
        }

        /**
         * What the pod asks for, as far as its namespace has the right to ask (see {@link QuotaRights}).
         *
         * @param nodeThreshold the node's KLC threshold ({@link Allocations#nodeThreshold})
         */
        public static ShareQuota of(PodView pod, PodView.GpuContainer container, double nodeThreshold) {
            QuotaRights.PodQuota q = QuotaRights.grant(pod.annotations(), container.smRequest(), Priority.BEST_EFFORT,
                    pod.sloRight(), nodeThreshold);
            Map<String, Long> stages = pod.assigned().filter(AssignedGpus::isSplit)
                    .filter(a -> pod.gpuContainers().size() == 1
                            && a.stages().stream().mapToLong(AssignedGpus.Stage::memoryMib).sum() == container.memoryMib())
                    .map(a -> a.stages().stream().collect(java.util.stream.Collectors.toMap(
                            AssignedGpus.Stage::uuid, AssignedGpus.Stage::memoryMib)))
                    .orElse(Map.of());
            return new ShareQuota(q.smLimit(), q.priority(), q.klcThreshold(), container.memoryMib(), stages);
        }

        /** Value equality that also treats two NaN thresholds as equal. */
        boolean same(ShareQuota o) {
            return smLimit == o.smLimit && priority == o.priority && Double.compare(klcThreshold, o.klcThreshold) == 0
                    && memoryMib == o.memoryMib && stageMemoryMib.equals(o.stageMemoryMib);
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
