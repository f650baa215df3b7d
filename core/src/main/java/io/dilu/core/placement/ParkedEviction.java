package io.dilu.core.placement;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Which parked instances go when a placement needs their memory (core's {@code RevisionScaler}: a parked instance
 * holds its model in GPU memory and no SM). A parked instance is the first thing to give up for a new one — it
 * costs a wake, a new one a whole placement — but only as many as the placement needs, least recently parked first,
 * on one GPU: the scheduler extender and the fleet model both ask this, then place again with the GPU's memory freed.
 * A pure function of the bookings and the parked instances.
 */
public final class ParkedEviction {

    private ParkedEviction() {}

    /** A parked instance: where its memory is booked, how much, and since when it has been parked. */
    public record Parked(String id, String gpuUuid, long memoryMib, Instant parkedAt) {}

    /**
     * The fewest parked instances of one GPU, least recently parked first, whose memory makes {@code memoryMib} free
     * there; of several GPUs that would do, the one whose victims were parked longest ago. Empty when no GPU frees
     * enough by its parked instances alone.
     */
    public static List<Parked> victims(ClusterState state, long memoryMib, List<Parked> parked) {
        Map<String, List<Parked>> byGpu = parked.stream().collect(Collectors.groupingBy(Parked::gpuUuid));
        Optional<List<Parked>> best = Optional.empty();
        for (Map.Entry<String, List<Parked>> gpu : byGpu.entrySet()) {
            ClusterState.GpuUsage usage = state.usage(gpu.getKey());
            long free = usage.capacityMib() - usage.memoryMib();
            List<Parked> lru = gpu.getValue().stream().sorted(Comparator.comparing(Parked::parkedAt)).toList();
            List<Parked> chosen = new ArrayList<>();
            for (Parked p : lru) {
                if (free >= memoryMib) {
                    break;
                }
                chosen.add(p);
                free += p.memoryMib();
            }
            if (free >= memoryMib && !chosen.isEmpty() && best.map(b -> better(chosen, b)).orElse(true)) {
                best = Optional.of(List.copyOf(chosen));
            }
        }
        return best.orElse(List.of());
    }

    /** Fewer victims first; among as many, the set whose most recently parked one was parked earlier. */
    private static boolean better(List<Parked> a, List<Parked> b) {
        if (a.size() != b.size()) {
            return a.size() < b.size();
        }
        return a.getLast().parkedAt().isBefore(b.getLast().parkedAt());
    }
}
