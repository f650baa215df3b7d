package io.dilu.extender.state;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.placement.Apportion;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.Slot;
import io.dilu.kube.PodShare;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A pod's GPU slots, read from its {@code dilu.io/assigned-gpus} and containers, and written as that annotation. */
final class PodSlots {

    private PodSlots() {}

    /**
     * The annotation for a placement: one GPU per container, or for a split container each stage's GPU with its
     * percent and memory (core apportions a whole-percent request in whole percents).
     */
    static AssignedGpus assignment(PlacementDecision.Placed placed, boolean split) {
        if (split && placed.slots().size() > 1) {
            return AssignedGpus.split(placed.slots().stream()
                    .map(s -> new AssignedGpus.Stage(s.gpuUuid(), s.requestMilli() / 10, s.memoryMib())).toList());
        }
        return AssignedGpus.ofContainers(placed.slots().stream().map(Slot::gpuUuid).toList());
    }

    /** What a split container holds: each stage as written, its limit as core's placement gave it. */
    private static Optional<PlacementDecision.Placed> stagesOf(PodShare pod, String node, AssignedGpus assigned) {
        if (pod.containers().size() != 1) {
            return Optional.empty();
        }
        int limit = PodQuotaAnnotations.smLimit(pod.annotations(), pod.containers().getFirst().smPercent());
        int[] requests = assigned.stages().stream().mapToInt(AssignedGpus.Stage::smPercent).toArray();
        long[] memory = assigned.stages().stream().mapToLong(AssignedGpus.Stage::memoryMib).toArray();
        int[] limits = Apportion.stageLimits(limit, requests, memory);
        List<Slot> slots = new ArrayList<>();
        for (int i = 0; i < assigned.stages().size(); i++) {
            AssignedGpus.Stage s = assigned.stages().get(i);
            slots.add(new Slot(s.uuid(), s.smPercent() * 10, limits[i] * 10, s.memoryMib()));
        }
        return Optional.of(new PlacementDecision.Placed(node, slots));
    }

    /**
     * What a bound pod holds: container i on the i-th GPU of its assignment, shares on one GPU summed, a container
     * without a memory limit at {@code defaultMemoryMib}; empty when the assignment does not fit its containers.
     */
    static Optional<PlacementDecision.Placed> held(PodShare pod, String node, AssignedGpus assigned, long defaultMemoryMib) {
        if (assigned.isSplit()) {
            return stagesOf(pod, node, assigned);
        }
        Map<String, long[]> perGpu = new LinkedHashMap<>();
        for (int i = 0; i < pod.containers().size(); i++) {
            PodShare.Container c = pod.containers().get(i);
            Optional<String> gpu = assigned.forContainer(i);
            if (gpu.isEmpty() || c.smPercent() < 1 || c.smPercent() > 100) {
                return Optional.empty();
            }
            long[] sum = perGpu.computeIfAbsent(gpu.get(), g -> new long[3]);
            sum[0] += c.smPercent() * 10L;
            sum[1] += PodQuotaAnnotations.smLimit(pod.annotations(), c.smPercent()) * 10L;
            sum[2] += c.memoryMib().orElse(defaultMemoryMib);
        }
        List<Slot> slots = new ArrayList<>();
        perGpu.forEach((gpu, s) -> slots.add(new Slot(gpu, (int) s[0], (int) s[1], s[2])));
        return Optional.of(new PlacementDecision.Placed(node, slots));
    }
}
