package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.AssignedGpus;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Guesses which container a kubelet request is for. Neither GetPreferredAllocation nor Allocate names the
 * pod, but the kubelet admits pods one at a time, so the container being admitted is one on this node
 * that asks for that many SM percent and owns no share yet; the scheduler's {@code dilu.io/assigned-gpus}
 * says which GPU it should get. The guess gives a container its quota from its first period; the
 * {@link Reconciler} confirms or corrects it from the kubelet's PodResources API.
 */
public final class PodMatcher {

    private PodMatcher() {}

    /**
     * A container that may be the one being admitted, with where the scheduler put it: one GPU, or for a
     * container split into pipeline stages its percent of each GPU ({@code stages}, else empty).
     */
    public record Candidate(ContainerRef ref, PodView pod, Optional<String> assignedGpu, Map<String, Integer> stages) {

        /** The IDs to take per GPU, when the scheduler said. */
        Optional<Map<String, Integer>> shares(int size) {
            if (!stages.isEmpty()) {
                return Optional.of(stages);
            }
            return assignedGpu.map(g -> Map.of(g, size));
        }
    }

    /** Unowned containers of live pods asking for {@code smPercent}, the oldest pod first. */
    static List<Candidate> candidates(Collection<PodView> pods, Set<ContainerRef> owned, int smPercent) {
        List<Candidate> out = new ArrayList<>();
        for (PodView pod : pods) {
            if (pod.terminal()) {
                continue;
            }
            for (int i = 0; i < pod.gpuContainers().size(); i++) {
                PodView.GpuContainer c = pod.gpuContainers().get(i);
                ContainerRef ref = pod.ref(c);
                if (c.smRequest() == smPercent && !owned.contains(ref)) {
                    out.add(new Candidate(ref, pod, pod.assignedGpu(i), stagesOf(pod, c)));
                }
            }
        }
        // Stable in the pod's container order, which is the order the kubelet allocates them in.
        out.sort(Comparator.comparing((Candidate c) -> c.pod().created())
                .thenComparing(c -> c.pod().namespace()).thenComparing(c -> c.pod().name()));
        return out;
    }

    /** A split container's stages, percent by GPU, when they add up to what it asks; else empty. */
    private static Map<String, Integer> stagesOf(PodView pod, PodView.GpuContainer c) {
        return pod.assigned().filter(a -> a.isSplit() && pod.gpuContainers().size() == 1 && a.splitPercent() == c.smRequest())
                .map(a -> a.stages().stream().collect(Collectors.toMap(AssignedGpus.Stage::uuid, AssignedGpus.Stage::smPercent)))
                .orElse(Map.of());
    }

    /**
     * The container an Allocate of {@code smPercent} on {@code gpus} is for: one the scheduler put on exactly
     * those GPUs first, then one with no assignment, then one assigned elsewhere (the kubelet did not follow the
     * preference).
     */
    public static Optional<Candidate> forAllocate(Collection<PodView> pods, Set<ContainerRef> owned, Set<String> gpus,
            int smPercent) {
        return candidates(pods, owned, smPercent).stream().min(Comparator.comparingInt(c -> {
            Optional<Map<String, Integer>> shares = c.shares(smPercent);
            return shares.isEmpty() ? 1 : shares.get().keySet().equals(gpus) ? 0 : 2;
        }));
    }

    /**
     * The IDs a share of {@code size} should be taken from, per GPU: where the scheduler put the oldest waiting
     * container of that size whose GPUs still have the room; empty when no assignment applies.
     *
     * @param available free device IDs per GPU UUID, as the kubelet offers them
     */
    public static Optional<Map<String, Integer>> preferredShares(Collection<PodView> pods, Set<ContainerRef> owned, int size,
            Map<String, Integer> available) {
        return candidates(pods, owned, size).stream()
                .flatMap(c -> c.shares(size).stream())
                .filter(shares -> shares.entrySet().stream().allMatch(e -> available.getOrDefault(e.getKey(), 0) >= e.getValue()))
                .findFirst();
    }
}
