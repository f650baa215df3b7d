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
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code ./dilu simulate --events FILE}: an event list replayed with Dilu and the baselines — Exclusive,
 * static quotas at the limit (INFless-l) and at the request (INFless-r), and plain best fit — printing each
 * policy's active GPUs (peak, mean, fragmentation at the peak) and one {@code BENCH events} line.
 */
final class EventReplay {

    private EventReplay() {}

    static List<EventSimulation.Result> run(PrintWriter out, String source, List<EventCsv.Event> events,
            ClusterShape shape, PlacementParameters params, Writer series) throws IOException {
        List<SimInstance> started = events.stream().filter(e -> e instanceof EventCsv.Start)
                .map(e -> ((EventCsv.Start) e).asked()).toList();
        List<NodeInventory> nodes = shape.nodesFor(started);
        Map<String, Supplier<PlacementPolicy>> policies = new java.util.LinkedHashMap<>();
        policies.put("dilu", () -> new ComplementaryPlacement(params));
        policies.put("exclusive", ExclusivePlacement::new);
        policies.put("static-limit", () -> new StaticQuotaPlacement(params));
        policies.put("static-request", () -> StaticQuotaPlacement.atRequest(params));
        policies.put("bestfit", BestFitPlacement::new);
        out.printf(Locale.ROOT, "Replaying %s: %d instances, %d events over %.0f s, on nodes of %d GPUs × %d GB%n%n", source,
                started.size(), events.size(), events.getLast().timeS() - events.getFirst().timeS(), shape.gpusPerNode(),
                shape.gpuMemoryMib() / 1024);
        // The replay's own time, for Dilu: one warm-up pass, then the median of five.
        for (int i = 0; i < 2; i++) {
            EventSimulation.run(policies.get("dilu").get(), nodes, events);
        }
        double[] times = new double[5];
        for (int i = 0; i < times.length; i++) {
            long t0 = System.nanoTime();
            EventSimulation.run(policies.get("dilu").get(), nodes, events);
            times[i] = (System.nanoTime() - t0) / 1e9;
        }
        java.util.Arrays.sort(times);
        out.printf("%-15s %6s %8s %9s %12s %12s %9s%n", "policy", "peak", "at s", "mean", "SM frag@peak", "mem frag@peak",
                "unplaced");
        List<EventSimulation.Result> results = new ArrayList<>();
        for (var p : policies.entrySet()) {
            EventSimulation.Result r = EventSimulation.run(p.getValue().get(), nodes, events);
            results.add(r);
            out.printf(Locale.ROOT, "%-15s %6d %8.0f %9.1f %11.1f%% %12.1f%% %9d%n", p.getKey(), r.peakGpus(),
                    r.peakTimeS(), r.meanGpus(), 100 * r.smFragmentationAtPeak(), 100 * r.memoryFragmentationAtPeak(),
                    r.unplaced());
        }
        EventSimulation.Result dilu = results.getFirst();
        for (EventSimulation.Result r : results.subList(1, results.size())) {
            out.printf(Locale.ROOT, "  dilu's peak is %.1f%% below %s's%n", 100.0 * (r.peakGpus() - dilu.peakGpus()) / r.peakGpus(),
                    r.policy());
        }
        if (series != null) {
            series.write("time_s,policy,active_gpus\n");
            for (EventSimulation.Result r : results) {
                for (EventSimulation.Point point : r.series()) {
                    series.write(String.format(Locale.ROOT, "%.3f,%s,%d%n", point.timeS(), r.policy(), point.activeGpus()));
                }
            }
        }
        out.printf(Locale.ROOT, "BENCH events instances=%d seconds=%.4f peak_dilu=%d peak_exclusive=%d peak_static_limit=%d "
                + "peak_static_request=%d peak_bestfit=%d%n", started.size(), times[times.length / 2], dilu.peakGpus(),
                results.get(1).peakGpus(), results.get(2).peakGpus(), results.get(3).peakGpus(), results.get(4).peakGpus());
        out.flush();
        return results;
    }
}
