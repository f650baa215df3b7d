package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.plot.Charts;
import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jfree.chart.JFreeChart;

/**
 * The co-scaling runs as figures and a report, after the paper's Figure 15 (trace analysis on co-scaling
 * performance): per trace, one figure of four panels over the trace's seconds — the request rate; each
 * policy's instances; the GPUs' worth of SM they hold; the requests each policy served late, per second — as
 * {@code <trace>.png} and {@code <trace>.svg}, and {@code report.md} with a table per trace and the figures
 * linked. Everything written is a function of the inputs alone: the same runs give the same bytes of SVG and
 * Markdown.
 */
public final class CoScalingReport {

    /** Most steps a line has in a figure: a longer trace is drawn at the highest value of buckets of seconds. */
    static final int MAX_STEPS = 360;
    static final int WIDTH = 1000;
    static final int HEIGHT = 1000;
    static final String REPORT = "report.md";

    /** Where the model's figures come from, said on every figure and at the top of the report. */
    public static final Provenance MODEL = new Provenance("a model, not a measurement (docs/coscaling.md)",
            "**A model, not a measurement**: every number and figure here comes from the fluid model described in "
                    + "docs/coscaling.md, not from a cluster.");

    /**
     * Where a report's numbers come from: a short line under each figure's title and a paragraph at the top of the
     * report (a measured run says what it measured, and labels emulated GPUs so).
     */
    public record Provenance(String figureLine, String reportParagraph) {}

    private CoScalingReport() {}

    /** One trace and what each policy made of it, in the order the report lists and colours them. */
    public record TraceRuns(RateTrace trace, List<CoScalingSimulation.Result> results) {

        public TraceRuns {
            results = List.copyOf(results);
            if (results.isEmpty()) {
                throw new IllegalArgumentException("trace " + trace.name() + " has no runs");
            }
            for (CoScalingSimulation.Result r : results) {
                if (r.instances().length != trace.seconds() || r.share().length != trace.seconds()
                        || r.late().length != trace.seconds()) {
                    throw new IllegalArgumentException(r.policy() + "'s run does not cover the " + trace.seconds()
                            + " seconds of " + trace.name());
                }
            }
        }
    }

    /**
     * Writes the figures of every trace and {@code report.md} into {@code dir} (made if missing), replacing
     * files of those names; returns the files written, report.md last.
     */
    public static List<Path> write(Path dir, FunctionProfile profile, List<TraceRuns> runs) throws IOException {
        return write(dir, profile, runs, MODEL);
    }

    /** As {@link #write(Path, FunctionProfile, List)}, saying where the numbers come from as {@code provenance}. */
    public static List<Path> write(Path dir, FunctionProfile profile, List<TraceRuns> runs, Provenance provenance)
            throws IOException {
        Files.createDirectories(dir);
        List<String> stems = fileStems(runs.stream().map(r -> r.trace().name()).toList());
        List<Path> written = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            Path png = dir.resolve(stems.get(i) + ".png");
            Path svg = dir.resolve(stems.get(i) + ".svg");
            Charts.write(figure(runs.get(i), provenance), WIDTH, HEIGHT, png, svg, "fig-" + stems.get(i) + "-");
            written.add(png);
            written.add(svg);
        }
        Path report = dir.resolve(REPORT);
        Files.writeString(report, markdown(profile, runs, stems, provenance), StandardCharsets.UTF_8);
        written.add(report);
        return List.copyOf(written);
    }

    /**
     * File names for the traces: each name with every character but letters, digits, '.', '_' and '-' made
     * '_', "trace" before one that would be empty or start with '.', and a -2, -3, … after a name already
     * taken (two traces may have the same name, or names that differ only in characters made '_').
     */
    static List<String> fileStems(List<String> traceNames) {
        Set<String> taken = new HashSet<>();
        List<String> stems = new ArrayList<>();
        for (String name : traceNames) {
            String base = name.replaceAll("[^A-Za-z0-9._-]", "_");
            if (base.isEmpty() || base.startsWith(".")) {
                base = "trace" + base; // no hidden files
            }
            String stem = base;
            for (int n = 2; !taken.add(stem); n++) {
                stem = base + "-" + n;
            }
            stems.add(stem);
        }
        return stems;
    }

    /** Seconds per drawn step: 1 up to {@link #MAX_STEPS} seconds, more for longer traces. */
    static int bucketSeconds(int seconds) {
        return Math.max(1, (seconds + MAX_STEPS - 1) / MAX_STEPS);
    }

    /** The highest value of each {@code bucket} seconds (the last bucket may be shorter). */
    static double[] bucketMax(double[] values, int bucket) {
        double[] max = new double[(values.length + bucket - 1) / bucket];
        Arrays.fill(max, Double.NEGATIVE_INFINITY);
        for (int t = 0; t < values.length; t++) {
            max[t / bucket] = Math.max(max[t / bucket], values[t]);
        }
        return max;
    }

    static JFreeChart figure(TraceRuns run) {
        return figure(run, MODEL);
    }

    static JFreeChart figure(TraceRuns run, Provenance provenance) {
        RateTrace trace = run.trace();
        int bucket = bucketSeconds(trace.seconds());
        double[] starts = new double[(trace.seconds() + bucket - 1) / bucket];
        Arrays.setAll(starts, i -> (double) i * bucket);
        List<Charts.Steps> rps = List.of(new Charts.Steps("requests/s", Color.BLACK, starts,
                bucketMax(trace.rps(), bucket), trace.seconds()));
        List<Charts.Steps> instances = new ArrayList<>();
        List<Charts.Steps> share = new ArrayList<>();
        List<Charts.Steps> late = new ArrayList<>();
        for (int i = 0; i < run.results().size(); i++) {
            CoScalingSimulation.Result r = run.results().get(i);
            double[] counts = Arrays.stream(r.instances()).asDoubleStream().toArray();
            instances.add(new Charts.Steps(r.policy(), Charts.color(i), starts, bucketMax(counts, bucket), trace.seconds()));
            share.add(new Charts.Steps(r.policy(), Charts.color(i), starts, bucketMax(r.share(), bucket), trace.seconds()));
            late.add(new Charts.Steps(r.policy(), Charts.color(i), starts, bucketMax(r.late(), bucket), trace.seconds()));
        }
        String subtitle = provenance.figureLine() + "; "
                + (bucket == 1 ? "every second drawn" : "each step the highest value of " + bucket + " s");
        return Charts.stacked(trace.name() + ": co-scaling", subtitle, "time (s)", 0, trace.seconds(), List.of(
                new Charts.Panel("requests/s", rps, false, false),
                new Charts.Panel("instances", instances, true, true),
                new Charts.Panel("GPU share (GPUs of SM)", share, false, false),
                new Charts.Panel("late requests/s", late, false, false)));
    }

    static String markdown(FunctionProfile profile, List<TraceRuns> runs, List<String> stems) {
        return markdown(profile, runs, stems, MODEL);
    }

    static String markdown(FunctionProfile profile, List<TraceRuns> runs, List<String> stems, Provenance provenance) {
        StringBuilder md = new StringBuilder("# Co-scaling report\n\n");
        md.append(provenance.reportParagraph()).append("\n\n");
        md.append("One function per trace (").append(profile.summary()).append("); policies in the order of the tables.\n\n");
        md.append("Each figure, top to bottom over the trace's seconds: the request rate; each policy's instances "
                + "(starting, serving or parked); the GPUs' worth of SM they hold (what they booked while starting, what vertical "
                + "scaling gives them once ready); the requests each policy served later than the SLO or left waiting, "
                + "per second (its SLO violations). The tables count every second; a figure of a trace longer than "
                + MAX_STEPS + " s draws each line at the highest value of each bucket of seconds, as its caption says.\n");
        for (int i = 0; i < runs.size(); i++) {
            TraceRuns run = runs.get(i);
            RateTrace trace = run.trace();
            String stem = stems.get(i);
            md.append("\n## ").append(escape(trace.name())).append("\n\n");
            md.append(String.format(Locale.ROOT, "%d s, %.0f requests, mean %.1f rps, peak %.1f rps.\n\n", trace.seconds(),
                    trace.total(), trace.total() / trace.seconds(), Arrays.stream(trace.rps()).max().orElse(0)));
            md.append("| policy | cold starts (scale-out / failed wake) | wakes | SVR % | SM GPU-s | memory GiB·s | "
                    + "dominant-share GPU-s | peak instances | mean instances | peak GPU share |\n");
            md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            for (CoScalingSimulation.Result r : run.results()) {
                CoScalingSimulation.Books b = r.books();
                md.append(String.format(Locale.ROOT, "| %s | %d / %d | %d | %.2f | %.1f | %.0f | %.1f | %d | %.2f | %.2f |\n",
                        escape(r.policy()), b.scaleOutColdStarts(), b.failedWakeColdStarts(), b.wakes(),
                        100 * r.violationRate(), r.gpuSeconds(), b.memoryGibSeconds(), b.dominantGpuSeconds(),
                        r.peakInstances(), r.meanInstances(), Arrays.stream(r.share()).max().orElse(0)));
            }
            md.append("\nCold starts leave out the deployment at t=0; a parked instance books no SM, only its memory; the "
                    + "dominant share of an instance is the larger of its SM share and its memory share of its GPU (DRF, "
                    + "Ghodsi et al., NSDI'11).\n");
            int bucket = bucketSeconds(trace.seconds());
            md.append("\n![").append(escape(trace.name()))
                    .append(": request rate, instances, GPU share and late requests per second](").append(stem).append(".png)\n\n");
            md.append(bucket == 1 ? "Every second drawn" : "Each line drawn at the highest value of every " + bucket + " s")
                    .append("; [SVG](").append(stem).append(".svg).\n");
        }
        return md.toString();
    }

    /** {@code text} with Markdown's punctuation escaped, so a trace's name shows as it is. */
    private static String escape(String text) {
        return text.replaceAll("([\\\\`*_{}\\[\\]<>()#+!|])", "\\\\$1");
    }
}
