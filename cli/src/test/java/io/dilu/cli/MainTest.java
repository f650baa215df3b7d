package io.dilu.cli;

import static io.dilu.cli.TestingCli.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.PlacementParameters;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.TestingInferenceServer;
import io.dilu.simulator.EventPlot;
import io.dilu.simulator.plot.Svg;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MainTest {

    @TempDir
    Path dir;

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
        TestingCli.Run r = run("simulate", "--instances", csv.toString());
        assertThat(r.exit()).isZero();
        // Three inference instances share one GPU (Σreq 0.9, Σlim 1.5), training takes two more.
        assertThat(r.out()).containsPattern("dilu\\s+3\\s+1\\s+4 ");
        assertThat(r.out()).containsPattern("exclusive\\s+5\\s+");
    }

    @Test
    void omegaAndGammaDefaultToCoresPlacementParameters() {
        PlacementParameters d = PlacementParameters.DEFAULTS;
        assertThat(run("simulate", "--help").out()).contains("Ω (default " + d.omega() + ")", "γ (default " + d.gamma() + ")");
        assertThat(run("simulate", "--count", "20").out()).contains(String.format("(Ω = %.2f, γ = %.2f)", d.omega(), d.gamma()));
    }

    @Test
    void badRowsAreReportedWithLineNumbersAndFailTheCommand() throws Exception {
        Path csv = dir.resolve("bad.csv");
        Files.writeString(csv, "type,gpus,sm_request,sm_limit,memory_gb\ninference,1,1.5,0.5,8\n");
        TestingCli.Run r = run("simulate", "--instances", csv.toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("line 2: sm_request=1.5 is not allowed: must be in 0.001..1.0");
        assertThat(run("simulate", "--instances", dir.resolve("missing.csv").toString()).err()).contains("no such file");
    }

    @Test
    void simulatesAUsersOwnOpenbListAndRefusesABadRowByItsLine() throws Exception {
        Path nodes = dir.resolve("nodes.csv");
        Files.writeString(nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,2,T4\nn1,8000,32768,1,P100\n");
        Path pods = dir.resolve("pods.csv");
        Files.writeString(pods, """
                name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
                a,2000,4096,1,500,T4
                b,4000,8192,0,0,
                c,2000,4096,1,1000,
                """);
        TestingCli.Run r = run("simulate", "--openb", pods.toString(), "--nodes", nodes.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("(3 pods, 1 CPU-only)", "node CPU and memory modelled");
        assertThat(r.out()).containsPattern("\\ndilu\\s+\\d+\\.\\d\\d%");
        assertThat(r.out()).containsPattern("\\nfgd-simulator\\s+").containsPattern("\\nbestfit-node-simulator\\s+");
        assertThat(run("simulate", "--openb", pods.toString(), "--nodes", nodes.toString(), "--gpu-only").out())
                .contains("(2 pods, 0 CPU-only)", "GPUs only");

        Files.writeString(pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,500\nb,1,1,3,500\n");
        TestingCli.Run bad = run("simulate", "--openb", pods.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains(pods + ":3: num_gpu=3 with gpu_milli=500");
        TestingCli.Run badBench = run("bench", "openb", "--trace", pods.toString());
        assertThat(badBench.exit()).isEqualTo(2);
        assertThat(badBench.err()).contains(pods + ":3: num_gpu=3 with gpu_milli=500");
        assertThat(run("bench", "openb", "--trace", dir.resolve("none.csv").toString()).err()).contains("no such file");
        assertThat(run("simulate", "--nodes", nodes.toString()).err()).contains("--nodes and --gpu-only go with --openb");
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
        TestingCli.Run r = run("simulate", "coscaling", "--trace", trace.toString(), "--policies", "dilu,kpa", "--series", series.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).containsPattern("BENCH coscaling model=fluid trace=f.csv dilu_cold_starts=\\d+ .* kpa_gpu_s=[0-9.]+( [a-z_]+=[^ ]+)*\\n")
                .doesNotContain("fastgs");
        assertThat(Files.readAllLines(series)).hasSize(1 + 2 * 300).first().isEqualTo("trace,policy,second,rps,instances,gpu_share,late");

        Files.writeString(trace, "second,rps\n0,1\n5,1\n");
        TestingCli.Run bad = run("simulate", "coscaling", "--trace", trace.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("f.csv:3: second must be 1");
        assertThat(run("simulate", "coscaling", "--pattern", "weekly").err()).contains("--pattern must be bursty, periodic or sporadic");
        assertThat(run("simulate", "coscaling", "--pattern", "bursty", "--policies", "nope").err())
                .contains("policy nope is not one of");
    }

    @Test
    void coscalingWritesTheReportOfItsRunWhereAsked() throws Exception {
        Path report = dir.resolve("out");
        TestingCli.Run r = run("simulate", "coscaling", "--pattern", "sporadic", "--seconds", "120", "--policies", "dilu,kpa",
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
        TestingCli.Run bad = run("simulate", "coscaling", "--pattern", "sporadic", "--seconds", "10", "--report", file.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("is a file, not a directory");
        assertThat(run("simulate", "coscaling", "--help").out()).contains("--report=DIR");
    }

    @Test
    void coscalingTakesTheFunctionFromAProfileFileMidSizeOrTheShippedOne() throws Exception {
        Path profile = dir.resolve("resnet.yaml");
        Files.writeString(profile, io.dilu.simulator.coscaling.FunctionProfilesTest.KUBECTL_YAML);
        TestingCli.Run r = run("simulate", "coscaling", "--pattern", "bursty", "--seconds", "120", "--policies", "dilu,kpa",
                "--profile", profile.toString(), "--cold-start", "20");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("one function, resnet: SLO 200 ms, a batch 50.0 ms, 160.0 rps at 20% SM, 280.0 rps at 40%, "
                + "509 rps with a whole GPU, cold start 20 s");
        assertThat(r.out().strip().lines().toList().getLast()).startsWith("BENCH coscaling model=fluid trace=bursty dilu_cold_starts=");

        assertThat(run("simulate", "coscaling", "--pattern", "bursty", "--seconds", "60", "--profile", "mid-size").out())
                .contains("one function, f: SLO 200 ms, a batch 50.0 ms, 50.0 rps at 20% SM, 80.0 rps at 40%");
        assertThat(run("simulate", "coscaling", "--pattern", "bursty", "--seconds", "60").out())
                .as("the bench's function by default").contains("one function, bert-large: SLO 130 ms");

        Files.writeString(profile, io.dilu.simulator.coscaling.FunctionProfilesTest.KUBECTL_YAML
                .replace("servingThroughputRpsAtLimit: 280", "servingThroughputRpsAtLimit: -1"));
        TestingCli.Run bad = run("simulate", "coscaling", "--pattern", "bursty", "--profile", profile.toString());
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains(profile + ":32: status.servingThroughputRpsAtLimit must be a number in 160..1e7");
        assertThat(run("simulate", "coscaling", "--profile", dir.resolve("none.yaml").toString()).err()).contains("no such file");
        assertThat(run("simulate", "coscaling", "--pattern", "bursty", "--cold-start", "-1").err())
                .contains("--cold-start must be in 0..3600 seconds, got -1");
        assertThat(run("simulate", "coscaling", "--help").out()).contains("--profile=FILE|NAME", "mid-size", "--cold-start");
    }

    @Test
    void theCoscalingBenchSaysWhereItsReportGoesAndEachTraceStillEndsWithItsBenchLine() throws Exception {
        Path report = dir.resolve("bench");
        TestingCli.Run r = run("bench", "coscaling", "--report", report.toString());
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
    void theFleetBenchEndsWithOneBenchLinePerPolicyAndRefusesAnUnknownPolicy() {
        TestingCli.Run r = run("bench", "coscaling-fleet", "--smoke", "--policies", "dilu,kpa");
        assertThat(r.exit()).as(r.err()).isZero();
        List<String> lines = r.out().strip().lines().toList();
        assertThat(lines.subList(lines.size() - 2, lines.size())).satisfiesExactly(
                l -> assertThat(l).startsWith("BENCH coscaling-fleet model=fluid policy=dilu functions=8 seconds=3600 "),
                l -> assertThat(l).startsWith("BENCH coscaling-fleet model=fluid policy=kpa functions=8 seconds=3600 "));
        assertThat(lines.subList(0, lines.size() - 2)).noneMatch(l -> l.startsWith("BENCH"))
                .anyMatch(l -> l.startsWith("issue 35's bar against kpa: "));
        TestingCli.Run bad = run("bench", "coscaling-fleet", "--smoke", "--policies", "dilu,nope");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("policy nope is not one of");
    }

    @Test
    void anEventReplayIsPlottedAsPngAndSvg() throws Exception {
        Path events = dir.resolve("events.csv");
        assertThat(run("simulate", "--generate-events", events.toString(), "--count", "60").exit()).isZero();
        Path png = dir.resolve("gpus.png");
        TestingCli.Run r = run("simulate", "--events", events.toString(), "--plot", png.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("plot: " + png + " and " + dir.resolve("gpus.svg"));
        assertThat(r.out().strip().lines().toList().getLast()).startsWith("BENCH events");
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(EventPlot.WIDTH);
        assertThat(image.getHeight()).isEqualTo(EventPlot.HEIGHT);
        assertThat(Svg.texts(Files.readString(dir.resolve("gpus.svg"))))
                .contains("Active GPUs over time: events.csv", "active GPUs", "time (s)", "dilu", "exclusive", "static-limit",
                        "static-request", "bestfit");

        TestingCli.Run jpg = run("simulate", "--events", events.toString(), "--plot", dir.resolve("gpus.jpg").toString());
        assertThat(jpg.exit()).isEqualTo(2);
        assertThat(jpg.err()).contains("--plot needs --events and a FILE ending in .png");
        assertThat(run("simulate", "--count", "10", "--plot", png.toString()).exit()).isEqualTo(2);
    }

    @Test
    void refusesOmegaAboveGamma() {
        TestingCli.Run r = run("simulate", "--count", "10", "--omega", "1.5", "--gamma", "1.2");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("gamma must be in omega");
    }

    @Test
    void loadReplaysATraceAgainstAServerAndWritesEveryRequest() throws Exception {
        Path trace = dir.resolve("t.csv");
        Files.writeString(trace, "second,rps\n0,4\n1,4\n");
        Path csv = dir.resolve("requests.csv");
        try (TestingInferenceServer server = TestingInferenceServer.answeringAfter(Duration.ofMillis(5))) {
            TestingCli.Run r = run("load", "--trace", trace.toString(), "--target", server.uri().toString(), "--slo", "3600",
                    "--out", csv.toString());
            assertThat(r.exit()).as(r.err()).isZero();
            assertThat(r.out()).containsPattern(
                    "BENCH load trace=t.csv requests=8 failures=0 p50_ms=[0-9.]+ p95_ms=[0-9.]+ p99_ms=[0-9.]+ svr=0.00\n");
            assertThat(Files.readAllLines(csv)).hasSize(9).first().isEqualTo(LoadResult.CSV_HEADER);
            assertThat(Files.readAllLines(csv).get(1)).matches("0,0\\.[0-9]{6},[0-9]+\\.[0-9]{6},200");

            TestingCli.Run noSlo = run("load", "--trace", trace.toString(), "--target", server.uri() + "/");
            assertThat(noSlo.out()).containsPattern("BENCH load trace=t.csv requests=8 failures=0 p50_ms=[0-9.]+ "
                    + "p95_ms=[0-9.]+ p99_ms=[0-9.]+\n");
        }
    }

    @Test
    void loadRefusesBadOptionsNamingThem() throws Exception {
        Path trace = dir.resolve("t.csv");
        Files.writeString(trace, "second,rps\n0,1\n");
        String t = trace.toString();
        String url = "http://127.0.0.1:1";
        record Case(String message, String... args) {}
        for (Case c : List.of(
                new Case("--target ftp://x is not allowed: must be an http", "--trace", t, "--target", "ftp://x"),
                new Case("--target http:///infer is not allowed: must name a host", "--trace", t, "--target", "http:///infer"),
                new Case("--slo must be in 0.001..3600 seconds, got 0.0", "--trace", t, "--target", url, "--slo", "0"),
                new Case("--timeout must be in 0.001..3600", "--trace", t, "--target", url, "--timeout", "-1"),
                new Case("--max-outstanding must be in 1..65536", "--trace", t, "--target", url, "--max-outstanding", "0"),
                new Case("--max-buffered must be in 0..10000000", "--trace", t, "--target", url, "--max-buffered", "-5"),
                new Case("'--seed'", "--trace", t, "--target", url, "--seed", "x"),
                new Case("--target", "--trace", t),
                new Case("--trace", "--target", url),
                new Case("mutually exclusive", "--trace", t, "--requests", t, "--target", url),
                new Case("no such file", "--trace", dir.resolve("none.csv").toString(), "--target", url),
                new Case("--out " + dir.resolve("no/such.csv") + " cannot be written", "--trace", t, "--target", url,
                        "--out", dir.resolve("no/such.csv").toString()))) {
            String[] args = Stream.concat(Stream.of("load"), Arrays.stream(c.args())).toArray(String[]::new);
            TestingCli.Run r = run(args);
            assertThat(r.exit()).as(String.join(" ", args)).isEqualTo(2);
            assertThat(r.err()).as(String.join(" ", args)).contains(c.message());
        }
        Files.writeString(trace, "second,rps\n0,1\n0,2\n");
        assertThat(run("load", "--trace", t, "--target", url).err()).contains("t.csv:3: second must be 1");
    }

    @Test
    void loadHelpGivesEveryOptionsDefault() {
        TestingCli.Run r = run("load", "--help");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("--trace=FILE", "--requests=FILE", "--target=URL", "--slo=SECONDS", "(default: none)",
                "--out=FILE", "--seed=S", "(default 42)", "--timeout=SECONDS", "(default 30", "--max-outstanding=N",
                "(default 512)", "--max-buffered=N", "(default 10000)");
    }
}
