package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Brings the agent's allocations in line with what the kubelet says it allocated (PodResources API), the
 * node's truth: which container owns each share, with the quota its pod asks for; which shares no container
 * holds any more (released after a grace period, so a kubelet that is restarting and lists nothing yet does
 * not cost a running container its share); and which pods' {@code dilu.io/assigned-gpus} disagree with the
 * GPUs their containers actually got. A pure function of its inputs and {@code now}.
 */
public final class Reconciler {

    private Reconciler() {}

    /** What to change. */
    public sealed interface Change permits Bind, Missing, Present, Release, CorrectAnnotation {}

    /**
     * Give an allocation its owner and its pod's quota.
     *
     * @param corrected the allocation had been matched to another container at Allocate
     */
    public record Bind(String allocation, ContainerRef owner, Allocation.ShareQuota quota, boolean corrected)
            implements Change {}

    /** The kubelet no longer lists the share, since {@code since}. */
    public record Missing(String allocation, Instant since) implements Change {}

    /** The kubelet lists the share again. */
    public record Present(String allocation) implements Change {}

    /** No container has held the share for the grace period: remove its control block. */
    public record Release(String allocation) implements Change {}

    /** Why an annotation is rewritten. */
    public enum Mismatch {
        /** The pod carries no (well-formed) assignment, e.g. it was not placed by Dilu's scheduler. */
        MISSING,
        /** The kubelet put a container on another GPU than the scheduler assigned. */
        DIFFERENT
    }

    /** Rewrite a pod's {@code dilu.io/assigned-gpus} to the GPUs its containers hold. */
    public record CorrectAnnotation(ContainerRef.PodKey pod, String uid, Mismatch reason, String actual)
            implements Change {}

    /**
     * @param listing the {@code dilu.io/gpu-sm} device IDs of each container, from a successful PodResources
     *     List (never call this with the result of a failed one)
     * @param pods the pods of this node known from the API server; a pod absent here keeps its quota and
     *     annotation as they are
     * @param nodeThreshold the node's KLC threshold, below which a pod's own needs the quota right
     */
    public static List<Change> plan(Collection<Allocation> allocations, Map<ContainerRef, Set<String>> listing,
            Map<ContainerRef.PodKey, PodView> pods, Instant now, Duration grace, double nodeThreshold) {
        List<Change> changes = new ArrayList<>();
        Map<Set<String>, List<Allocation>> byDevices = new HashMap<>();
        for (Allocation a : allocations) {
            byDevices.computeIfAbsent(a.deviceIds(), k -> new ArrayList<>()).add(a);
        }
        Map<String, ContainerRef> held = new HashMap<>();
        listing.entrySet().stream().sorted(Map.Entry.comparingByKey(Comparator.comparing(ContainerRef::toString)))
                .forEach(e -> {
                    // The same IDs may have been allocated again after their first holder ended: the newest is live.
                    byDevices.getOrDefault(e.getValue(), List.of()).stream()
                            .filter(a -> !held.containsKey(a.id()))
                            .max(Comparator.comparing(Allocation::created).thenComparing(Allocation::id))
                            .ifPresent(a -> held.put(a.id(), e.getKey()));
                });
        for (Allocation a : allocations) {
            ContainerRef owner = held.get(a.id());
            if (owner == null) {
                if (a.missingSince().isEmpty()) {
                    changes.add(new Missing(a.id(), now));
                } else if (!now.isBefore(a.missingSince().get().plus(grace))) {
                    changes.add(new Release(a.id()));
                }
                continue;
            }
            if (a.missingSince().isPresent()) {
                changes.add(new Present(a.id()));
            }
            PodView pod = pods.get(owner.podKey());
            Optional<PodView.GpuContainer> container = pod == null ? Optional.empty() : pod.container(owner.container());
            Allocation.ShareQuota quota = container.map(c -> Allocation.ShareQuota.of(pod, c, nodeThreshold)).orElse(a.quota());
            if (!a.owner().equals(Optional.of(owner)) || !a.quota().same(quota)) {
                boolean corrected = a.owner().isPresent() && !a.owner().get().equals(owner);
                changes.add(new Bind(a.id(), owner, quota, corrected));
            }
        }
        for (PodView pod : pods.values()) {
            actualAssignment(pod, listing).ifPresent(actual -> {
                Optional<AssignedGpus> parsed = pod.assigned();
                if (parsed.isEmpty()) {
                    changes.add(new CorrectAnnotation(pod.key(), pod.uid(), Mismatch.MISSING, actual.format()));
                } else if (!parsed.get().equals(actual)) {
                    changes.add(new CorrectAnnotation(pod.key(), pod.uid(), Mismatch.DIFFERENT, actual.format()));
                }
            });
        }
        return changes;
    }

    /** The GPUs a pod's containers hold, once the kubelet lists every one of them. */
    static Optional<AssignedGpus> actualAssignment(PodView pod, Map<ContainerRef, Set<String>> listing) {
        if (pod.gpuContainers().isEmpty()) {
            return Optional.empty();
        }
        List<String> perContainer = new ArrayList<>();
        for (PodView.GpuContainer c : pod.gpuContainers()) {
            Set<String> ids = listing.get(pod.ref(c));
            if (ids == null || ids.isEmpty()) {
                return Optional.empty(); // not all admitted yet: judge when they are
            }
            Map<String, Integer> perGpu = new java.util.TreeMap<>();
            ids.forEach(id -> perGpu.merge(GpuSmDevicePlugin.gpuOf(id), 1, Integer::sum));
            if (perGpu.size() > 1) {
                return pod.gpuContainers().size() == 1 ? Optional.of(stages(pod, c, perGpu)) : Optional.empty();
            }
            perContainer.add(perGpu.keySet().iterator().next());
        }
        return Optional.of(AssignedGpus.ofContainers(perContainer));
    }

    /**
     * A container whose share the kubelet took from several GPUs: pipeline stages. The IDs say each GPU's
     * percent but not its memory, so a written split that agrees on the percents is kept as it is (stage order
     * and memory included); otherwise memory is taken in proportion to the percents.
     */
    private static AssignedGpus stages(PodView pod, PodView.GpuContainer c, Map<String, Integer> perGpu) {
        Optional<AssignedGpus> written = pod.assigned().filter(AssignedGpus::isSplit);
        if (written.isPresent() && written.get().stages().size() == perGpu.size() && written.get().stages().stream()
                .allMatch(s -> Integer.valueOf(s.smPercent()).equals(perGpu.get(s.uuid())))) {
            return written.get();
        }
        int total = perGpu.values().stream().mapToInt(Integer::intValue).sum();
        List<AssignedGpus.Stage> stages = new ArrayList<>();
        perGpu.forEach((gpu, percent) -> stages.add(
                new AssignedGpus.Stage(gpu, percent, Math.max(1, c.memoryMib() * percent / total))));
        return AssignedGpus.split(stages);
    }
}
