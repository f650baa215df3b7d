package io.dilu.simulator;

import io.dilu.core.placement.BestFitPlacement;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.placement.PlacementPolicy;
import io.dilu.core.placement.StaticQuotaPlacement;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code ./dilu simulate --events FILE}: an event list replayed with Dilu and the baselines — Exclusive,
 * static quotas at the limit (INFless-l) and at the request (INFless-r), and plain best fit — printing each
 * policy's active GPUs (peak, mean, fragmentation at the peak) and one {@code BENCH events} line.
 */
public final class EventReplay {

    private EventReplay() {}

    public static List<EventSimulation.Result> run(PrintWriter out, String source, List<EventCsv.Event> events,
            ClusterShape shape, PlacementParameters params, Writer series) throws IOException {
        List<SimInstance> started = events.stream().filter(e -> e instanceof EventCsv.Start)
                .map(e -> ((EventCsv.Start) e).asked()).toList();
        List<NodeInventory> nodes = shape.nodesFor(started);
        Map<String, Supplier<PlacementPolicy>> policies = new LinkedHashMap<>();
        policies.put("dilu", () -> new ComplementaryPlacement(params));
        policies.put("exclusive", ExclusivePlacement::new);
        policies.put("static-limit", () -> new StaticQuotaPlacement(params));
        policies.put("static-request", () -> StaticQuotaPlacement.atRequest(params));
        policies.put("bestfit", BestFitPlacement::new);
        out.printf(Locale.ROOT, "Replaying %s: %d instances, %d events over %.0f s, on nodes of %d GPUs × %d GB%n%n", source,
                started.size(), events.size(), events.getLast().timeS() - events.getFirst().timeS(), shape.gpusPerNode(),
                shape.gpuMemoryMib() / 1024);
        // The replay's own time, for Dilu: two warm-up passes, then the median of five; the last is its result.
        EventSimulation.Result dilu = null;
        double[] times = new double[7];
        for (int i = 0; i < times.length; i++) {
            long t0 = System.nanoTime();
            dilu = EventSimulation.run(policies.get("dilu").get(), nodes, events);
            times[i] = (System.nanoTime() - t0) / 1e9;
        }
        double[] timed = Arrays.copyOfRange(times, 2, times.length);
        Arrays.sort(timed);
        out.printf("%-15s %6s %8s %9s %12s %12s %9s%n", "policy", "peak", "at s", "mean", "SM frag@peak", "mem frag@peak",
                "unplaced");
        Map<String, EventSimulation.Result> results = new LinkedHashMap<>();
        for (var p : policies.entrySet()) {
            EventSimulation.Result r = p.getKey().equals("dilu") ? dilu : EventSimulation.run(p.getValue().get(), nodes, events);
            results.put(p.getKey(), r);
            out.printf(Locale.ROOT, "%-15s %6d %8.0f %9.1f %11.1f%% %12.1f%% %9d%n", p.getKey(), r.peakGpus(),
                    r.peakTimeS(), r.meanGpus(), 100 * r.smFragmentationAtPeak(), 100 * r.memoryFragmentationAtPeak(),
                    r.unplaced());
        }
        for (EventSimulation.Result r : results.values()) {
            if (r != dilu) {
                out.printf(Locale.ROOT, "  dilu's peak is %.1f%% below %s's%n",
                        100.0 * (r.peakGpus() - dilu.peakGpus()) / r.peakGpus(), r.policy());
            }
        }
        if (series != null) {
            series.write("time_s,policy,active_gpus\n");
            for (EventSimulation.Result r : results.values()) {
                for (EventSimulation.Point point : r.series()) {
                    series.write(String.format(Locale.ROOT, "%.3f,%s,%d%n", point.timeS(), r.policy(), point.activeGpus()));
                }
            }
        }
        out.printf(Locale.ROOT, "BENCH events instances=%d seconds=%.4f peak_dilu=%d peak_exclusive=%d peak_static_limit=%d "
                + "peak_static_request=%d peak_bestfit=%d%n", started.size(), timed[timed.length / 2], dilu.peakGpus(),
                results.get("exclusive").peakGpus(), results.get("static-limit").peakGpus(),
                results.get("static-request").peakGpus(), results.get("bestfit").peakGpus());
        out.flush();
        return List.copyOf(results.values());
    }
}
