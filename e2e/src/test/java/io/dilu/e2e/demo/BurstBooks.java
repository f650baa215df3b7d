package io.dilu.e2e.demo;

import io.dilu.loadgen.Outcome;
import io.dilu.loadgen.RequestRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToIntFunction;

/**
 * The demo's books on its bursts of 160 rps: where a scale-out put the scaled function's pods and what their limits got
 * there, and which late requests came while a burst still arrived and which in the queue it left. A scale-out whose
 * pods share one GPU promises limits that the GPU may not have (issue 47), and a burst's late requests are mostly its
 * queue's once its pods are ready: told apart, the summary says which of the two a run suffered from.
 */
final class BurstBooks {

    /** One of the scaled function's pods as the API server had it in a second: its GPU and its SM limit, percent. */
    record Placed(String pod, String gpu, int limitPercent) {}

    /** One view's grant to one of the scaled function's pods, percent of its GPU. */
    record Grant(double t, String gpu, String pod, double percent) {}

    /** A burst of the story: its requests arrive in [from, until); those due until {@code queueUntil} meet its queue. */
    record Burst(int from, int until, int queueUntil) {}

    /** The story's two bursts beyond one instance's limit: the one that scales out and the one that wakes. */
    static final List<Burst> BURSTS = List.of(new Burst(45, 60, 75),
            new Burst(ClusterDemo.THIRD_BURST, ClusterDemo.THIRD_BURST + 10, ClusterDemo.THIRD_BURST + 20));

    private BurstBooks() {}

    /** The burst whose window (arrival and queue) second {@code t} of the run falls in, if any. */
    static Burst burstAt(int t) {
        int s = t % ClusterDemo.STORY_SECONDS;
        return BURSTS.stream().filter(b -> s >= b.from() && s < b.queueUntil()).findFirst().orElse(null);
    }

    /**
     * Where the function's pods were at second {@code at}, per GPU: how many, the SM limits they were promised there,
     * and what the views in [from, to) saw them granted there, on average (a view that saw none of them there is not
     * counted).
     */
    static String where(List<Placed> pods, List<Grant> grants, int at, int from, int to) {
        if (pods == null || pods.isEmpty()) {
            return "where its pods were at t=" + at + " s was not read";
        }
        Map<String, int[]> byGpu = new TreeMap<>();
        for (Placed p : pods) {
            int[] c = byGpu.computeIfAbsent(p.gpu(), g -> new int[2]);
            c[0]++;
            c[1] += p.limitPercent();
        }
        List<String> parts = new ArrayList<>();
        byGpu.forEach((gpu, c) -> {
            Map<Double, Double> perView = new TreeMap<>();
            grants.stream().filter(g -> g.gpu().equals(gpu) && g.t() >= from && g.t() < to)
                    .forEach(g -> perView.merge(g.t(), g.percent(), Double::sum));
            String granted = perView.isEmpty() ? "no grant seen there at t=" + from + "–" + to + " s"
                    : String.format(Locale.ROOT, "granted %.0f%% of the GPU on average at t=%d–%d s",
                            perView.values().stream().mapToDouble(Double::doubleValue).average().orElse(0), from, to);
            parts.add(String.format(Locale.ROOT, "%d on %s (their limits %d%% of the GPU%s; %s)", c[0], shortGpu(gpu), c[1],
                    c[1] > 100 ? ", more than it has" : "", granted));
        });
        return "at t=" + at + " s its " + pods.size() + " pod(s) sat " + String.join("; ", parts);
    }

    /**
     * Late or failed requests over the bursts' windows, split into those due while a burst arrived and those due in the
     * queue it left, and over the rest of the run.
     */
    static String late(List<RequestRecord> requests, double sloSeconds) {
        long[] late = new long[3];
        long[] all = new long[3];
        for (RequestRecord r : requests) {
            Burst b = burstAt(r.second());
            int part = b == null ? 2 : r.second() % ClusterDemo.STORY_SECONDS < b.until() ? 0 : 1;
            all[part]++;
            if (!(r.outcome() instanceof Outcome.Answered a && a.ok() && a.latencySeconds() <= sloSeconds)) {
                late[part]++;
            }
        }
        return String.format(Locale.ROOT, "late or failed over the bursts (t=%s): %.1f%% of %d; while the bursts arrived"
                        + " (t=%s) %.1f%% of %d, in the queues they left (t=%s) %.1f%% of %d; %.2f%% of the other %d",
                windows(Burst::from, Burst::queueUntil), share(late[0] + late[1], all[0] + all[1]), all[0] + all[1],
                windows(Burst::from, Burst::until), share(late[0], all[0]), all[0],
                windows(Burst::until, Burst::queueUntil), share(late[1], all[1]), all[1], share(late[2], all[2]), all[2]);
    }

    private static String windows(ToIntFunction<Burst> start, ToIntFunction<Burst> end) {
        return String.join(" and ", BURSTS.stream().map(b -> start.applyAsInt(b) + "–" + end.applyAsInt(b) + " s").toList());
    }

    private static double share(long part, long whole) {
        return 100.0 * part / Math.max(1, whole);
    }

    /** The end of an emulated GPU's UUID, as the live view shows it. */
    static String shortGpu(String uuid) {
        return uuid.substring(Math.max(0, uuid.length() - 22));
    }
}
