package io.dilu.simulator;

import io.dilu.simulator.plot.Charts;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jfree.chart.JFreeChart;

/**
 * {@code ./dilu simulate --events FILE --plot FILE.png}: each policy's active GPUs over the replay, one line per
 * policy (the paper's Figure 20), as PNG and SVG. A replay of thousands of events is drawn in {@link #STEPS}
 * buckets of time, each at the most GPUs active within it, so the SVG stays small and no peak is lost.
 */
public final class EventPlot {

    static final int STEPS = 720;
    public static final int WIDTH = 1000;
    public static final int HEIGHT = 500;

    private EventPlot() {}

    public static void write(Path png, Path svg, String source, List<EventSimulation.Result> results, double fromS, double toS)
            throws IOException {
        Charts.write(chart(source, results, fromS, toS), WIDTH, HEIGHT, png, svg, "events-");
    }

    static JFreeChart chart(String source, List<EventSimulation.Result> results, double fromS, double toS) {
        List<Charts.Steps> lines = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            EventSimulation.Result r = results.get(i);
            double[][] steps = bucketMax(r.series(), fromS, toS);
            lines.add(new Charts.Steps(r.policy(), Charts.color(i), steps[0], steps[1], toS));
        }
        String subtitle = String.format(Locale.ROOT, "each step the most GPUs active in %.3g s", (toS - fromS) / STEPS);
        return Charts.stacked("Active GPUs over time: " + source, subtitle, "time (s)", fromS, toS,
                List.of(new Charts.Panel("active GPUs", lines, true, true)));
    }

    /**
     * {@code series} (active GPUs from each point's time until the next one's; none before the first) in
     * {@link #STEPS} equal buckets of {@code fromS..toS}: their start times, and the most GPUs active in each.
     * Without time between the two, one step.
     */
    static double[][] bucketMax(List<EventSimulation.Point> series, double fromS, double toS) {
        int n = toS > fromS ? STEPS : 1;
        double width = (toS - fromS) / n;
        double[] starts = new double[n];
        double[] max = new double[n];
        int next = 0;
        int active = 0;
        for (int b = 0; b < n; b++) {
            starts[b] = fromS + b * width;
            double end = b == n - 1 ? Double.POSITIVE_INFINITY : fromS + (b + 1) * width;
            // A change exactly at the bucket's start holds from it on: what it replaced is not in the bucket.
            while (next < series.size() && series.get(next).timeS() <= starts[b]) {
                active = series.get(next++).activeGpus();
            }
            int most = active;
            while (next < series.size() && series.get(next).timeS() < end) {
                active = series.get(next++).activeGpus();
                most = Math.max(most, active);
            }
            max[b] = most;
        }
        return new double[][] {starts, max};
    }
}
