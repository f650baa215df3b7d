package io.dilu.deviceplugin.agent;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Guesses which container a kubelet request is for. Neither GetPreferredAllocation nor Allocate names the
 * pod, but the kubelet admits pods one at a time, so the container being admitted is one on this node
 * that asks for that many SM percent and owns no share yet; the scheduler's {@code dilu.io/assigned-gpus}
 * says which GPU it should get. The guess gives a container its quota from its first period; the
 * {@link Reconciler} confirms or corrects it from the kubelet's PodResources API.
 */
public final class PodMatcher {

    private PodMatcher() {}

    /** A container that may be the one being admitted, with the GPU the scheduler assigned to it. */
    public record Candidate(ContainerRef ref, PodView pod, Optional<String> assignedGpu) {}

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
                    out.add(new Candidate(ref, pod, pod.assignedGpu(i)));
                }
            }
        }
        // Stable in the pod's container order, which is the order the kubelet allocates them in.
        out.sort(Comparator.comparing((Candidate c) -> c.pod().created())
                .thenComparing(c -> c.pod().namespace()).thenComparing(c -> c.pod().name()));
        return out;
    }

    /**
     * The container an Allocate of {@code smPercent} on {@code gpu} is for: one assigned to that GPU first,
     * then one with no assignment, then one assigned elsewhere (the kubelet did not follow the preference).
     */
    public static Optional<Candidate> forAllocate(Collection<PodView> pods, Set<ContainerRef> owned, String gpu,
            int smPercent) {
        return candidates(pods, owned, smPercent).stream()
                .min(Comparator.comparingInt(c -> c.assignedGpu().map(g -> g.equals(gpu) ? 0 : 2).orElse(1)));
    }

    /**
     * The GPU a share of {@code size} should be taken from: the one assigned to the oldest waiting container
     * of that size whose GPU still has {@code size} free IDs; empty when no assignment applies.
     *
     * @param available free device IDs per GPU UUID, as the kubelet offers them
     */
    public static Optional<String> preferredGpu(Collection<PodView> pods, Set<ContainerRef> owned, int size,
            Map<String, Integer> available) {
        return candidates(pods, owned, size).stream()
                .flatMap(c -> c.assignedGpu().stream())
                .filter(g -> available.getOrDefault(g, 0) >= size)
                .findFirst();
    }
}
