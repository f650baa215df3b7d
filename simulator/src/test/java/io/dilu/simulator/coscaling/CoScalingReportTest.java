package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.plot.Svg;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CoScalingReportTest {

    @TempDir
    Path dir;

    private static final FunctionProfile PROFILE = FunctionProfile.midSize("f");

    /** Two minutes: 30 rps (one instance) for a minute, then 150 rps (Dilu scales out, KPA more so). */
    private static List<CoScalingReport.TraceRuns> twoMinutes() {
        double[] rps = new double[120];
        for (int t = 0; t < rps.length; t++) {
            rps[t] = t < 60 ? 30 : 150;
        }
        RateTrace trace = new RateTrace("step", rps);
        return List.of(new CoScalingReport.TraceRuns(trace, List.of(
                CoScalingSimulation.run(trace, PROFILE, new DiluPolicy(PROFILE)),
                CoScalingSimulation.run(trace, PROFILE, KpaPolicy.kpa(PROFILE)))));
    }

    @Test
    void writesAFigureAsPngAndSvgAndATableWithTheRunsNumbers() throws Exception {
        List<CoScalingReport.TraceRuns> runs = twoMinutes();
        Path out = dir.resolve("report");
        List<Path> files = CoScalingReport.write(out, PROFILE, runs);
        assertThat(files).containsExactly(out.resolve("step.png"), out.resolve("step.svg"), out.resolve("report.md"));

        BufferedImage png = ImageIO.read(out.resolve("step.png").toFile());
        assertThat(png).isNotNull();
        assertThat(png.getWidth()).isEqualTo(CoScalingReport.WIDTH);
        assertThat(png.getHeight()).isEqualTo(CoScalingReport.HEIGHT);
        assertThat(count(png, 0x0072B2)).as("pixels of Dilu's line (the first colour)").isGreaterThan(100);
        assertThat(count(png, 0xD55E00)).as("pixels of KPA's line (the second colour)").isGreaterThan(100);

        String svg = Files.readString(out.resolve("step.svg"));
        assertThat(Svg.texts(svg)).contains("step: co-scaling", "requests/s", "instances", "GPU share (GPUs of SM)",
                "late requests/s", "time (s)", "dilu", "kpa")
                .anyMatch(t -> t.contains("a model, not a measurement") && t.contains("every second drawn"));
        // Each policy has a line in the instances, share and late panels (and a mark in the legend).
        assertThat(occurrences(svg, "stroke:rgb(0,114,178)")).isGreaterThanOrEqualTo(3);
        assertThat(occurrences(svg, "stroke:rgb(213,94,0)")).isGreaterThanOrEqualTo(3);

        String md = Files.readString(out.resolve("report.md"));
        assertThat(md).contains("**A model, not a measurement**", "docs/coscaling.md", "## step",
                "120 s, 10800 requests, mean 90.0 rps, peak 150.0 rps.",
                "| policy | cold starts (scale-out / failed wake) | wakes | SVR % | SM GPU-s | memory GiB·s | "
                        + "dominant-share GPU-s | peak instances | mean instances | peak GPU share |",
                "![step: request rate, instances, GPU share and late requests per second](step.png)", "[SVG](step.svg)",
                "Every second drawn");
        for (CoScalingSimulation.Result r : runs.getFirst().results()) {
            double peakShare = java.util.Arrays.stream(r.share()).max().orElseThrow();
            CoScalingSimulation.Books b = r.books();
            assertThat(md).contains(String.format(Locale.ROOT, "| %s | %d / %d | %d | %.2f | %.1f | %.0f | %.1f | %d | %.2f | %.2f |",
                    r.policy(), b.scaleOutColdStarts(), b.failedWakeColdStarts(), b.wakes(), 100 * r.violationRate(),
                    r.gpuSeconds(), b.memoryGibSeconds(), b.dominantGpuSeconds(), r.peakInstances(), r.meanInstances(),
                    peakShare));
        }
        // The rows are in the runs' order: Dilu's before KPA's.
        assertThat(md.indexOf("| dilu |")).isPositive().isLessThan(md.indexOf("| kpa |"));
    }

    @Test
    void theSameRunsGiveTheSameBytes() throws Exception {
        CoScalingReport.write(dir.resolve("a"), PROFILE, twoMinutes());
        CoScalingReport.write(dir.resolve("b"), PROFILE, twoMinutes());
        for (String file : List.of("step.svg", "report.md")) {
            assertThat(Files.mismatch(dir.resolve("a").resolve(file), dir.resolve("b").resolve(file)))
                    .as("first byte where the two " + file + " differ").isEqualTo(-1L);
        }
        // The SVG's ids are named after the trace, not made up (JFreeSVG's own prefix is the clock's).
        assertThat(Files.readString(dir.resolve("a").resolve("step.svg"))).contains("id='fig-step-clip-0'");
    }

    @Test
    void anHourIsDrawnInTenSecondStepsOfTheirHighestValue() throws Exception {
        StringWriter log = new StringWriter();
        List<CoScalingReport.TraceRuns> runs = CoScalingBench.run(new PrintWriter(log), List.of(CoScalingBench.pattern("bursty",
                3600, 42)), CoScalingBench.COMPARED, null, dir);
        CombinedDomainXYPlot plot = (CombinedDomainXYPlot) CoScalingReport.figure(runs.getFirst()).getPlot();
        List<XYPlot> panels = plot.getSubplots();
        assertThat(panels).hasSize(4);
        for (XYPlot panel : panels) {
            for (int s = 0; s < panel.getDataset().getSeriesCount(); s++) {
                assertThat(panel.getDataset().getItemCount(s)).as("two points (a step) per 10 s").isEqualTo(2 * 360);
            }
        }
        assertThat(panels.get(1).getDataset().getSeriesCount()).isEqualTo(5);
        // The rate panel's highest point is the trace's peak: a burst is not averaged away.
        double peak = java.util.Arrays.stream(runs.getFirst().trace().rps()).max().orElseThrow();
        assertThat(panels.getFirst().getDataset().getYValue(0, maxItem(panels.getFirst()))).isEqualTo(peak);

        assertThat(Files.size(dir.resolve("bursty.svg"))).isLessThan(2_000_000);
        assertThat(Files.readString(dir.resolve("report.md"))).contains("Each line drawn at the highest value of every 10 s");
        assertThat(Svg.texts(Files.readString(dir.resolve("bursty.svg")))).anyMatch(t -> t.contains("highest value of 10 s"));
    }

    @Test
    void bucketsKeepTheirHighestValue() {
        assertThat(CoScalingReport.bucketMax(new double[] {1, 5, 2, 0, 3}, 2)).containsExactly(5, 2, 3);
        assertThat(CoScalingReport.bucketMax(new double[] {1, 5, 2}, 1)).containsExactly(1, 5, 2);
        assertThat(CoScalingReport.bucketSeconds(120)).isEqualTo(1);
        assertThat(CoScalingReport.bucketSeconds(360)).isEqualTo(1);
        assertThat(CoScalingReport.bucketSeconds(361)).isEqualTo(2);
        assertThat(CoScalingReport.bucketSeconds(3420)).isEqualTo(10);
        assertThat(CoScalingReport.bucketSeconds(3600)).isEqualTo(10);
    }

    @Test
    void everyTraceGetsFilesOfItsOwnWithSafeNames() {
        assertThat(CoScalingReport.fileStems(List.of("bursty", "a/b c", "bursty", "..", "a_b_c", "bursty-2")))
                .containsExactly("bursty", "a_b_c", "bursty-2", "trace..", "a_b_c-2", "bursty-2-2");
    }

    @Test
    void aTracesNameIsShownAsItIsInTheMarkdown() {
        String md = CoScalingReport.markdown(PROFILE, renamed("my|trace_[1]"), List.of("x"));
        assertThat(md).contains("## my\\|trace\\_\\[1\\]").contains("(x.png)");
    }

    @Test
    void aMeasuredRunSaysSoInsteadOfTheModelsCaveat() {
        CoScalingReport.Provenance measured = new CoScalingReport.Provenance("measured, emulated GPUs", "**Measured** here.");
        String md = CoScalingReport.markdown(PROFILE, twoMinutes(), List.of("x"), measured);
        assertThat(md).contains("**Measured** here.").doesNotContain("A model, not a measurement");
        assertThat(CoScalingReport.markdown(PROFILE, twoMinutes(), List.of("x"))).contains("A model, not a measurement");
        org.jfree.chart.JFreeChart figure = CoScalingReport.figure(twoMinutes().getFirst(), measured);
        List<String> subtitles = new java.util.ArrayList<>();
        for (int i = 0; i < figure.getSubtitleCount(); i++) {
            if (figure.getSubtitle(i) instanceof org.jfree.chart.title.TextTitle t) {
                subtitles.add(t.getText());
            }
        }
        assertThat(subtitles).anyMatch(t -> t.startsWith("measured, emulated GPUs")).noneMatch(t -> t.contains("a model"));
    }

    @Test
    void refusesARunThatDoesNotCoverItsTrace() {
        CoScalingReport.TraceRuns two = twoMinutes().getFirst();
        RateTrace longer = new RateTrace("longer", new double[121]);
        assertThatThrownBy(() -> new CoScalingReport.TraceRuns(longer, two.results()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not cover the 121 seconds");
        assertThatThrownBy(() -> new CoScalingReport.TraceRuns(longer, List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no runs");
    }

    private static List<CoScalingReport.TraceRuns> renamed(String name) {
        CoScalingReport.TraceRuns run = twoMinutes().getFirst();
        return List.of(new CoScalingReport.TraceRuns(new RateTrace(name, run.trace().rps()), run.results()));
    }

    private static int maxItem(XYPlot panel) {
        int best = 0;
        for (int i = 1; i < panel.getDataset().getItemCount(0); i++) {
            if (panel.getDataset().getYValue(0, i) > panel.getDataset().getYValue(0, best)) {
                best = i;
            }
        }
        return best;
    }

    private static int count(BufferedImage image, int rgb) {
        int n = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                n += (image.getRGB(x, y) & 0xFFFFFF) == rgb ? 1 : 0;
            }
        }
        return n;
    }

    private static int occurrences(String text, String part) {
        Matcher m = Pattern.compile(Pattern.quote(part)).matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }
}
