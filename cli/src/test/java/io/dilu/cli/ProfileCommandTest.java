package io.dilu.cli;

import static io.dilu.cli.TestingCli.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProfileCommandTest {

    @TempDir
    Path dir;

    /**
     * The traversal's whole grid (SM 10..100 × batch 1..32) of a model whose TE peaks inside it: Amdahl over
     * SMs, superlinear batch cost. The best within SLO 0.1 s (budget 50 ms) is SM 30, batch 4.
     */
    private static String convexSweep() {
        StringBuilder csv = new StringBuilder(ProfileTable.HEADER + "\n");
        for (int sm = 10; sm <= 100; sm += 10) {
            for (int b = 1; b <= 32; b *= 2) {
                double seconds = 2 * (2 + Math.pow(b, 1.3)) * (0.1 + 0.9 * 100.0 / sm) / 1000;
                csv.append(String.format(Locale.ROOT, "%d,%d,%.9f,%.6f%n", b, sm, seconds, b / seconds));
            }
        }
        return csv.toString();
    }

    @Test
    void replaysASweepAndEndsWithOneBenchLine() throws Exception {
        Path table = dir.resolve("convex.csv");
        Files.writeString(table, convexSweep());
        TestingCli.Run r = run("profile", "--table", table.toString(), "--slo", "0.1");

        assertThat(r.exit()).as(r.err()).isZero();
        String[] lines = r.out().strip().split("\n");
        assertThat(lines[lines.length - 1]).isEqualTo(
                "BENCH profile table=convex hgs_trials=9 chosen_sm=30 chosen_batch=4 te_vs_best=1.00 traversal_trials=60");
        assertThat(r.out().split("BENCH ", -1)).hasSize(2);
        // 8 trials of the search, then the chosen limit, SM 60, at batch 4 (the traversal had run it).
        assertThat(r.out()).contains("Hybrid Growth Search: 9 trials", "Traversal: 60 trials",
                "best SLO-meeting setting in the table: SM 30 batch 4");
        assertThat(r.out()).containsPattern("\\s+9\\s+4\\s+60\\s+0\\.0\\d+\\s+[0-9.]+ yes");
        assertThat(r.out()).containsPattern("at the limit, SM 60 batch 4: [0-9.]+ requests/s, 1\\.\\d\\d times the request's");
        // The first HGS trial: batch 1 at SM 10 misses the 50 ms budget.
        assertThat(r.out()).containsPattern("\\s+1\\s+1\\s+10\\s+0\\.0546\\d*\\s+[0-9.]+ no");
    }

    @Test
    void aSettingTheTableLacksIsAFailedTrial() throws Exception {
        Path table = dir.resolve("sparse.csv");
        Files.writeString(table, ProfileTable.HEADER + "\n1,10,0.01,100\n2,10,0.015,133\n");
        TestingCli.Run r = run("profile", "--table", table.toString(), "--slo", "0.1");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("no (not in the table)");
        // The limit's setting (SM 20, batch 2) is not in the table either: one more failed trial, its rate unknown.
        assertThat(r.out()).contains("at the limit, SM 20 batch 2: unknown (not in the table)");
        assertThat(r.out()).containsPattern("BENCH profile table=sparse hgs_trials=6 chosen_sm=10 chosen_batch=2 "
                + "te_vs_best=1\\.00 traversal_trials=60");
    }

    @Test
    void badOptionsAndRowsExitTwoNamingTheField() throws Exception {
        Path table = dir.resolve("t.csv");
        Files.writeString(table, ProfileTable.HEADER + "\n1,10,0.01,100\n");
        TestingCli.Run slo = run("profile", "--table", table.toString(), "--slo", "0");
        assertThat(slo.exit()).isEqualTo(2);
        assertThat(slo.err()).contains("--slo must be in (0, 3600]");

        Files.writeString(table, ProfileTable.HEADER + "\n1,101,0.01,100\n");
        TestingCli.Run row = run("profile", "--table", table.toString(), "--slo", "1");
        assertThat(row.exit()).isEqualTo(2);
        assertThat(row.err()).contains("t.csv:2: sm_percent must be in 1..100, got 101");

        assertThat(run("profile", "--table", dir.resolve("none.csv").toString(), "--slo", "1").exit()).isEqualTo(2);
        assertThat(run("profile", "--slo", "1").exit()).isEqualTo(2);
        assertThat(run("profile", "--help").out()).contains("--table", "--slo", "batch_size,sm_percent");
    }

    @Test
    void localNamesTheModelsAndTheMissingBuildAndRefusesTableOptions() throws Exception {
        TestingCli.Run model = run("profile", "--local", "--model", "resnet-9000", "--native", dir.toString());
        assertThat(model.exit()).isEqualTo(2);
        assertThat(model.err()).contains("--model must be one of resnet50, bert-large, mobilenet-v1, llama2-7b-decode, "
                + "resnet50-train, got 'resnet-9000'");

        TestingCli.Run unbuilt = run("profile", "--local", "--model", "resnet50", "--native", dir.resolve("nothing").toString());
        assertThat(unbuilt.exit()).isEqualTo(2);
        assertThat(unbuilt.err()).contains("the emulated GPU's workloads are not built: no " + dir.resolve("nothing/bin/emu-infer"));
        assertThat(run("bench", "profiling", "--native", dir.resolve("nothing").toString()).exit()).isEqualTo(2);

        Path table = dir.resolve("t.csv");
        Files.writeString(table, ProfileTable.HEADER + "\n1,10,0.01,100\n");
        TestingCli.Run both = run("profile", "--local", "--table", table.toString(), "--slo", "1");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("--table and --slo are not allowed with it");
        assertThat(run("profile", "--table", table.toString(), "--slo", "1", "--model", "resnet50").err())
                .contains("--model is for --local");
        assertThat(run("profile", "--table", table.toString(), "--slo", "1", "--out", dir.toString()).err())
                .contains("--out is for --local");
        TestingCli.Run outIsAFile = run("profile", "--local", "--model", "resnet50", "--out", table.toString(), "--native",
                dir.toString());
        assertThat(outIsAFile.exit()).isEqualTo(2);
        assertThat(outIsAFile.err()).contains("--out " + table + " is a file, not a directory");
        assertThat(run("profile", "--help").out()).contains("--local", "--model", "--out=DIR");
    }

    @Test
    void benchProfilingsSmokeSizeIsOneModelOfTheCatalogue() {
        assertThat(io.dilu.trials.EmulatedModels.named(Main.Bench.Profiling.SMOKE_MODEL)).isPresent();
        assertThat(run("bench", "profiling", "--help").out()).contains("--smoke", Main.Bench.Profiling.SMOKE_MODEL);
        TestingCli.Run unbuilt = run("bench", "profiling", "--smoke", "--native", dir.resolve("nothing").toString());
        assertThat(unbuilt.exit()).isEqualTo(2);
        assertThat(unbuilt.err()).contains("the emulated GPU's workloads are not built");
    }

    private static ProfileTable read(String body) throws Exception {
        return ProfileTable.read(new StringReader(ProfileTable.HEADER + "\n" + body), "sweep.csv");
    }

    @Test
    void readerNamesTheFileLineAndFieldOfEveryBadRow() {
        assertThatThrownBy(() -> read("""
                1,10,0.01,100
                2,10,0.02
                x,10,0.02,100
                0,10,0.02,100
                4,0,0.02,100
                4,20,-1,100
                4,30,NaN,100
                4,40,0.02,-3
                4,50,0.02,Infinity
                1,10,0.5,2
                """))
                .isInstanceOf(ProfileTable.InvalidTableException.class)
                .hasMessage(String.join("\n",
                        "sweep.csv:3: row must have 4 columns (batch_size,sm_percent,latency_s,throughput_rps), got 3",
                        "sweep.csv:4: batch_size must be an integer, got 'x'",
                        "sweep.csv:5: batch_size must be in 1..65536, got 0",
                        "sweep.csv:6: sm_percent must be in 1..100, got 0",
                        "sweep.csv:7: latency_s must be a finite number > 0, got -1",
                        "sweep.csv:8: latency_s must be a finite number > 0, got NaN",
                        "sweep.csv:9: throughput_rps must be a finite number >= 0, got -3",
                        "sweep.csv:10: throughput_rps must be a finite number >= 0, got Infinity",
                        "sweep.csv:11: batch_size,sm_percent must be unique: 1,10 is already on line 2"));
    }

    @Test
    void readerRefusesAMissingHeaderAndAnEmptyTable() {
        assertThatThrownBy(() -> ProfileTable.read(new StringReader("1,10,0.01,100\n"), "a.csv"))
                .hasMessageStartingWith("a.csv:1: header must be batch_size,sm_percent,latency_s,throughput_rps");
        assertThatThrownBy(() -> read("")).hasMessage("sweep.csv:1: rows must be at least one after the header, got none");
    }

    @Test
    void tableRunsRowsInMillisecondsAndMissingPointsAsFailures() throws Exception {
        ProfileTable t = read("4,30,0.05,80\n");
        assertThat(t.name()).isEqualTo("sweep");
        assertThat(t.run(30, 4).latencyMillis()).isEqualTo(50.0);
        assertThat(t.run(30, 8).latencyMillis()).isInfinite();
        assertThat(t.best(0.1)).isPresent();
        assertThat(t.best(0.09)).isEmpty();
    }
}
