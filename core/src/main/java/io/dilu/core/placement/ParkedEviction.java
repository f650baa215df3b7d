package io.dilu.core.placement;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Which parked instances go (core's {@code RevisionScaler}: a parked instance holds its model in GPU memory and no
 * SM), asked by the scheduler extender and by the fleet model alike; pure functions of the bookings and the parked
 * instances.
 *
 * <ul>
 *   <li>When a placement needs their memory ({@link #victims}): a parked instance is the first thing to give up for a
 *       new one — it costs a wake, a new one a whole placement — but only as many as the placement needs, on one GPU:
 *       the asking tenant's own first, then other tenants', least recently parked first within each. Parked memory is
 *       a cache, but another tenant's cache: of it a placement takes no more than it asks for itself, so that a pod
 *       created and deleted again (which costs its tenant nothing) cannot empty a neighbour's cache many times its
 *       size (issue 45: a 20,000 MiB pod evicted two of another namespace's parked pods).
 *   <li>When they alone hold a GPU ({@link #alone}): parking keeps a model warm for the price of its memory only while
 *       the GPU is in use anyway; a GPU that nothing but parked models holds is a whole GPU kept for them, and goes
 *       back — unless one of them is its revision's last instance kept in the request path (its revision may not
 *       reach zero). In the co-scaling fleet (docs/coscaling.md, 2026-11-28) keeping such GPUs cost Dilu 276.5
 *       GPU-hours against 158.7 without parking, for 1.4 points of SLO violations; handing them back at once gave
 *       157.6 at 2.84%, better than no parking (3.67%) on both counts.
 * </ul>
 */
public final class ParkedEviction {

    private ParkedEviction() {}

    /**
     * A parked instance: its tenant (the namespace, in the cluster), where its memory is booked, how much, since when
     * it has been parked, and whether it is its revision's last instance, kept in the request path because the
     * revision may not reach zero ({@code RevisionScaler.Decision#lastKept}).
     */
    public record Parked(String id, String tenant, String gpuUuid, long memoryMib, Instant parkedAt, boolean kept) {

        /** Not kept. */
        public Parked(String id, String tenant, String gpuUuid, long memoryMib, Instant parkedAt) {
            this(id, tenant, gpuUuid, memoryMib, parkedAt, false);
        }
    }

    /**
     * The parked instances of one GPU whose memory makes {@code memoryMib} free there: {@code tenant}'s own first, then
     * other tenants' while their memory together stays within {@code memoryMib}, least recently parked first within
     * each. Of several GPUs that would do, the one taking the least of other tenants' memory, then the fewest, then the
     * one whose victims were parked longest ago. Empty when no GPU frees enough that way.
     */
    public static List<Parked> victims(ClusterState state, String tenant, long memoryMib, List<Parked> parked) {
        Map<String, List<Parked>> byGpu = parked.stream().collect(Collectors.groupingBy(Parked::gpuUuid));
        Comparator<Parked> order = Comparator.comparing((Parked p) -> !p.tenant().equals(tenant))
                .thenComparing(Parked::parkedAt);
        Optional<List<Parked>> best = Optional.empty();
        for (Map.Entry<String, List<Parked>> gpu : byGpu.entrySet()) {
            ClusterState.GpuUsage usage = state.usage(gpu.getKey());
            long free = usage.capacityMib() - usage.memoryMib();
            List<Parked> chosen = new ArrayList<>();
            long others = 0;
            for (Parked p : gpu.getValue().stream().sorted(order).toList()) {
                if (free >= memoryMib) {
                    break;
                }
                boolean foreign = !p.tenant().equals(tenant);
                if (foreign && others + p.memoryMib() > memoryMib) {
                    continue;
                }
                chosen.add(p);
                free += p.memoryMib();
                others += foreign ? p.memoryMib() : 0;
            }
            if (free >= memoryMib && !chosen.isEmpty() && best.map(b -> better(tenant, chosen, b)).orElse(true)) {
                best = Optional.of(List.copyOf(chosen));
            }
        }
        return best.orElse(List.of());
    }

    /** Less of other tenants' memory first; then fewer victims; then the set whose latest parked was parked earlier. */
    private static boolean better(String tenant, List<Parked> a, List<Parked> b) {
        long foreignA = foreignMib(tenant, a), foreignB = foreignMib(tenant, b);
        if (foreignA != foreignB) {
            return foreignA < foreignB;
        }
        if (a.size() != b.size()) {
            return a.size() < b.size();
        }
        return latest(a).isBefore(latest(b));
    }

    private static long foreignMib(String tenant, List<Parked> victims) {
        return victims.stream().filter(p -> !p.tenant().equals(tenant)).mapToLong(Parked::memoryMib).sum();
    }

    private static Instant latest(List<Parked> victims) {
        return victims.stream().map(Parked::parkedAt).max(Comparator.naturalOrder()).orElseThrow();
    }

    /**
     * The parked instances on GPUs where nothing but parked instances is booked and none of them is kept. A revision's
     * last instance kept in the request path keeps its GPU (and the instances parked beside it): its revision may not
     * reach zero, so its ReplicaSet would start it again at once, a cold start to hold a GPU all the same. A last
     * instance parked in the path of a revision that may reach zero goes with its GPU: the revision's next request
     * starts one where there is room. In the co-scaling fleet (docs/coscaling.md, 2026-11-28 evening) keeping those
     * too cost 5.6–15.0 GPU-hours on seven seeds of the trace for 0.1–0.4 points of SLO violations.
     */
    public static List<Parked> alone(ClusterState state, List<Parked> parked) {
        Map<String, List<Parked>> byGpu = parked.stream().collect(Collectors.groupingBy(Parked::gpuUuid));
        List<Parked> out = new ArrayList<>();
        for (Map.Entry<String, List<Parked>> gpu : byGpu.entrySet()) {
            ClusterState.GpuUsage usage = state.usage(gpu.getKey());
            long parkedThere = gpu.getValue().stream().map(Parked::id).distinct().count();
            if (usage.instances() == parkedThere && gpu.getValue().stream().noneMatch(Parked::kept)) {
                out.addAll(gpu.getValue());
            }
        }
        return out;
    }
}
