package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalProfilingTest {

    /** What ends every BENCH line: how late the host ran a probe beside the model's trials. */
    private static final String HOST = " host_late_p99_ms=\\d+\\.\\d{3} host_late_max_ms=\\d+\\.\\d{3}";

    private static String run(List<EmulatedModel> models, Function<EmulatedModel, ReportingTrial> trials) {
        StringWriter text = new StringWriter();
        new LocalProfiling(new PrintWriter(text), trials).run(models);
        return text.toString();
    }

    private static List<String> benchLines(String out) {
        return Arrays.stream(out.split("\n")).filter(l -> l.startsWith("BENCH ")).toList();
    }

    /**
     * The catalogue on the emulator's arithmetic, exact (the real workloads differ from it by float rounding of
     * event times, which can move a tie between equally efficient settings but not the figures asserted here):
     * what ./dilu bench profiling reports, per model, last.
     */
    @Test
    void theCatalogueOnTheEmulatorsArithmeticEndsWithOneBenchLinePerModel() {
        String out = run(EmulatedModels.ALL, TestingEmulatedGpu::new);
        List<String> bench = benchLines(out);

        assertThat(bench).hasSize(5);
        // Each search's trials and then the one at its choice's limit and batch, which none of these paths had run.
        assertThat(bench.get(0)).startsWith("BENCH profiling model=resnet50 hgs_trials=9 traversal_trials=60 te_vs_best=1.00 "
                + "hgs_sm=30 hgs_batch=32").matches(".* gpu=emulated" + HOST);
        // 6.173 / 6.331 = 0.975 exactly, so the float rounding of event times decides between 0.97 and 0.98.
        assertThat(bench.get(1)).matches("BENCH profiling model=bert-large hgs_trials=8 traversal_trials=60 te_vs_best=0\\.9[78] "
                + "hgs_sm=10 hgs_batch=[124] best_sm=30 best_batch=8 gpu=emulated" + HOST);
        assertThat(bench.get(2)).startsWith("BENCH profiling model=mobilenet-v1 hgs_trials=7 traversal_trials=60 te_vs_best=1.00 ");
        // Batch 16 does not fit in memory: the three failed SM steps at batch 16 end the search at SM 30, batch 8,
        // while an SM share whose waves fit the grid better (SM 70) is more efficient.
        assertThat(bench.get(3)).matches(Pattern.quote("BENCH profiling model=llama2-7b-decode hgs_trials=10 traversal_trials=60 "
                + "te_vs_best=0.93 hgs_sm=30 hgs_batch=8 best_sm=70 best_batch=8 gpu=emulated") + HOST);
        assertThat(bench.get(4)).matches(Pattern.quote("BENCH profiling model=resnet50-train training_trials=8 request=75 limit=99 "
                + "request_throughput_vs_exclusive=0.803 limit_throughput_vs_exclusive=1.000 gpu=emulated") + HOST);
        assertThat(out.lines().filter(l -> l.startsWith("BENCH ")).count()).isEqualTo(5);
        assertThat(out.strip()).endsWith(bench.get(4));
    }

    @Test
    void aFailedTrialIsShownWithItsReasonAndNeverMeetsTheSlo() {
        String out = run(List.of(EmulatedModels.LLAMA2_7B), TestingEmulatedGpu::new);

        assertThat(out).containsPattern("\\s+7\\s+16\\s+30\\s+-\\s+-\\s+-\\s+no: exited with 3: cannot allocate the model's "
                + "activations: out of memory");
        assertThat(out).contains("failed, 20 trials (SM 10 batch 16 ... SM 100 batch 32): exited with 3");
        assertThat(out).containsPattern("\\s+30\\s+34\\.560\\*\\s+34\\.560\\*\\s+34\\.560\\*\\s+43\\.200\\*\\s+failed\\s+failed");
    }

    @Test
    void aModelNoTrialOfWhichMeetsTheSloHasNoChoiceAndARatioOfZero() {
        ReportingTrial tooSlow = (sm, batch) -> TrialRun.reported(sm, batch, new TrialReport(10, batch / 10.0, 0));
        String out = run(List.of(EmulatedModels.RESNET50), m -> tooSlow);

        assertThat(out).contains("choice: none, no trial met the SLO", "best: none, no trial met the SLO");
        assertThat(benchLines(out)).singleElement().asString().matches(Pattern.quote("BENCH profiling model=resnet50 hgs_trials=10 "
                + "traversal_trials=60 te_vs_best=0.00 hgs_sm=0 hgs_batch=0 best_sm=0 best_batch=0 gpu=emulated") + HOST);
    }

    @Test
    void itWritesEachModelsGpuFunctionProfile(@TempDir Path dir) throws Exception {
        StringWriter text = new StringWriter();
        LocalProfiling profiling = new LocalProfiling(new PrintWriter(text), TestingEmulatedGpu::new);
        profiling.run(List.of(EmulatedModels.BERT_LARGE, EmulatedModels.RESNET50_TRAINING), dir.resolve("profiles"));
        String out = text.toString();
        assertThat(out).containsPattern("limit: SM 20 batch [124], [0-9.]+ requests/s, [0-9.]+ times the request's \\(trial 8\\)");
        assertThat(out).contains("wrote " + dir.resolve("profiles/bert-large.yaml"), "wrote " + dir.resolve("profiles/resnet50-train.yaml"));
        assertThat(out.strip()).as("the BENCH lines still last").endsWith(benchLines(out).getLast());

        String yaml = Files.readString(dir.resolve("profiles/bert-large.yaml"));
        assertThat(yaml).startsWith("# bert-large as ./dilu profile --local found it").contains("- \"120\"");
        ProfileFile.Read read = ProfileFile.read(yaml, "bert-large.yaml");
        GpuFunctionProfile p = read.profile();
        assertThat(p.getSpec()).isEqualTo(profiling.profiles().getFirst().getSpec()).isEqualTo(EmulatedModels.BERT_LARGE.profileSpec());
        assertThat(p.getStatus()).isEqualTo(profiling.profiles().getFirst().getStatus());
        ProfileStatus s = p.getStatus();
        assertThat(p.conditionTrue(GpuFunctionProfile.READY)).isTrue();
        assertThat(s.searchTrials()).isEqualTo(8).isEqualTo(s.trials().size());
        assertThat(s.trials()).allSatisfy(t -> assertThat(t.gpu()).isEqualTo("emulated A100-40GB"));
        TrialRecord last = s.trials().getLast();
        assertThat(last.smPercent()).isEqualTo(s.smLimit()).isEqualTo(20);
        assertThat(s.servingThroughputRpsAtLimit()).isEqualTo(s.batchSize() / (last.latencyMillis() / 1000));

        ProfileFile.Read training = ProfileFile.read(Files.readString(dir.resolve("profiles/resnet50-train.yaml")), "t.yaml");
        assertThat(training.profile().getStatus().smRequest()).isEqualTo(75);
        assertThat(training.profile().getStatus().servingThroughputRpsAtLimit()).as("not served").isNull();
    }

    @Test
    void eachSearchRunsItsOwnTrials() {
        int[] opened = {0};
        run(List.of(EmulatedModels.MOBILENET), m -> {
            opened[0]++;
            return new TestingEmulatedGpu(m);
        });
        assertThat(opened[0]).isEqualTo(2);
    }
}
