package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.simulator.plot.Svg;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new Main());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void simulatesAUsersOwnInstances() throws Exception {
        Path csv = dir.resolve("mine.csv");
        Files.writeString(csv, """
                type,gpus,sm_request,sm_limit,memory_gb
                inference,1,0.3,0.5,8
                inference,1,0.3,0.5,8
                inference,1,0.3,0.5,8
                training,2,0.5,0.7,20
                """);
        Run r = run("simulate", "--instances", csv.toString());
        assertThat(r.exit()).isZero();
        // Three inference instances share one GPU (Σreq 0.9, Σlim 1.5), training takes two more.
        assertThat(r.out()).containsPattern("dilu\\s+3\\s+1\\s+4 ");
        assertThat(r.out()).containsPattern("exclusive\\s+5\\s+");
    }

    @Test
    void badRowsAreReportedWithLineNumbersAndFailTheCommand() throws Exception {
        Path csv = dir.resolve("bad.csv");
        Files.writeString(csv, "type,gpus,sm_request,sm_limit,memory_gb\ninference,1,1.5,0.5,8\n");
        Run r = run("simulate", "--instances", csv.toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("line 2: sm_request=1.5 is not allowed: must be in 0.001..1.0");
        assertThat(run("simulate", "--instances", dir.resolve("missing.csv").toString()).err()).contains("no such file");
    }

    @Test
    void coscalingRunsTheChosenPoliciesOnATraceFileAndWritesTheTimeSeries() throws Exception {
        Path trace = dir.resolve("f.csv");
        StringBuilder rows = new StringBuilder("second,rps\n");
        for (int t = 0; t < 300; t++) {
            rows.append(t).append(',').append(t < 150 ? 100 : 20).append('\n');
        }
        Files.writeString(trace, rows);
        Path series = dir.resolve("series.csv");
        Run r = run("simulate", "coscaling", "--trace", trace.toString(), "--policies", "dilu,kpa", "--series", series.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).containsPattern("BENCH coscaling model=fluid trace=f.csv dilu_cold_starts=\\d+ .* kpa_gpu_s=[0-9.]+\\n")
                .doesNotContain("fastgs");
        assertThat(Files.readAllLines(series)).hasSize(1 + 2 * 300).first().isEqualTo("trace,policy,second,rps,instances,gpu_share,late");

        Files.writeString(trace, "second,rps\n0,1\n5,1\n");
        Run bad = run("simulate", "coscaling", "--trace", trace.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("f.csv:3: second must be 1");
        assertThat(run("simulate", "coscaling", "--pattern", "weekly").err()).contains("--pattern must be bursty, periodic or sporadic");
        assertThat(run("simulate", "coscaling", "--pattern", "bursty", "--policies", "nope").err())
                .contains("policy nope is not one of");
    }

    @Test
    void coscalingWritesTheReportOfItsRunWhereAsked() throws Exception {
        Path report = dir.resolve("out");
        Run r = run("simulate", "coscaling", "--pattern", "sporadic", "--seconds", "120", "--policies", "dilu,kpa",
                "--report", report.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("figures and report: " + report.resolve("report.md"));
        assertThat(r.out().strip().lines().toList().getLast()).startsWith("BENCH coscaling model=fluid trace=sporadic");
        assertThat(ImageIO.read(report.resolve("sporadic.png").toFile()).getWidth()).isEqualTo(1000);
        assertThat(Files.readString(report.resolve("sporadic.svg"))).contains("sporadic: co-scaling");
        assertThat(Files.readString(report.resolve("report.md"))).contains("## sporadic", "| dilu |", "| kpa |")
                .doesNotContain("| fastgs |");

        Path file = dir.resolve("a-file");
        Files.writeString(file, "");
        Run bad = run("simulate", "coscaling", "--pattern", "sporadic", "--seconds", "10", "--report", file.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("is a file, not a directory");
        assertThat(run("simulate", "coscaling", "--help").out()).contains("--report=DIR");
    }

    @Test
    void theCoscalingBenchSaysWhereItsReportGoesAndEachTraceStillEndsWithItsBenchLine() throws Exception {
        Path report = dir.resolve("bench");
        Run r = run("bench", "coscaling", "--report", report.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        List<String> blocks = List.of(r.out().strip().split("\n\n"));
        assertThat(blocks.getFirst()).contains("figures and report: " + report.resolve("report.md"));
        assertThat(blocks.subList(1, blocks.size())).hasSize(4)
                .allSatisfy(b -> assertThat(b.lines().toList().getLast()).startsWith("BENCH coscaling model=fluid trace="));
        for (String trace : List.of("bursty", "periodic", "sporadic", "azure-llm-code")) {
            assertThat(report.resolve(trace + ".png")).isNotEmptyFile();
            assertThat(report.resolve(trace + ".svg")).isNotEmptyFile();
        }
        assertThat(report.resolve("report.md")).isNotEmptyFile();
        assertThat(run("bench", "coscaling", "--help").out()).contains("simulator/target/coscaling-report");
    }

    @Test
    void anEventReplayIsPlottedAsPngAndSvg() throws Exception {
        Path events = dir.resolve("events.csv");
        assertThat(run("simulate", "--generate-events", events.toString(), "--count", "60").exit()).isZero();
        Path png = dir.resolve("gpus.png");
        Run r = run("simulate", "--events", events.toString(), "--plot", png.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("plot: " + png + " and " + dir.resolve("gpus.svg"));
        assertThat(r.out().strip().lines().toList().getLast()).startsWith("BENCH events");
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(EventPlot.WIDTH);
        assertThat(image.getHeight()).isEqualTo(EventPlot.HEIGHT);
        assertThat(Svg.texts(Files.readString(dir.resolve("gpus.svg"))))
                .contains("Active GPUs over time: events.csv", "active GPUs", "time (s)", "dilu", "exclusive", "static-limit",
                        "static-request", "bestfit");

        Run jpg = run("simulate", "--events", events.toString(), "--plot", dir.resolve("gpus.jpg").toString());
        assertThat(jpg.exit()).isEqualTo(2);
        assertThat(jpg.err()).contains("--plot needs --events and a FILE ending in .png");
        assertThat(run("simulate", "--count", "10", "--plot", png.toString()).exit()).isEqualTo(2);
    }

    @Test
    void refusesOmegaAboveGamma() {
        Run r = run("simulate", "--count", "10", "--omega", "1.5", "--gamma", "1.2");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("gamma must be in omega");
    }
}
