package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.deviceplugin.bench.ColocationBench.Inference;
import io.dilu.deviceplugin.bench.ColocationBench.Mode;
import io.dilu.deviceplugin.bench.ColocationBench.Outcome;
import io.dilu.deviceplugin.bench.ColocationBench.Scenario;
import io.dilu.deviceplugin.bench.ColocationBench.Training;
import io.dilu.deviceplugin.bench.GpuColocation.Bar;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GpuColocationTest {

    private static final Lateness HOST = new Lateness(100, 0.1, 0.2, 0.3);

    /** train-inf's outcomes where the inference's p95 is {@code p95} and the training's rate {@code rate}, per way. */
    private static Map<Mode, Outcome> trainInf(Map<Mode, double[]> p95AndRate) {
        Map<Mode, Outcome> o = new EnumMap<>(Mode.class);
        p95AndRate.forEach((mode, v) -> o.put(mode, new Outcome(Map.of("inference", new double[] {v[0] / 2, v[0]}),
                Map.of("training", v[1]), mode == Mode.DILU ? 42 : 0, HOST)));
        return o;
    }

    @Test
    void gridsAreScaledToTheGpusSmsSoThatABatchTakesAsManyWaves() {
        assertThat(GpuColocation.scaled(108, ColocationBench.SCENARIO_SMS)).isEqualTo(108);
        assertThat(GpuColocation.scaled(108, 132)).as("one wave of an H100").isEqualTo(132);
        assertThat(GpuColocation.scaled(432, 132)).isEqualTo(528);
        assertThat(GpuColocation.scaled(1, 10)).as("never an empty grid").isEqualTo(1);
    }

    @Test
    void theProgramRunsTheBenchsOwnWorkloads() {
        Inference inf = (Inference) ColocationBench.TRAIN_INF.workloads().get(0);
        List<String> infer = GpuColocation.command(inf, 132, "777", 9, Path.of("/a/arrivals.txt"), 5);
        assertThat(String.join(" ", infer)).isEqualTo("infer --iters 777 --seconds 9 --arrivals /a/arrivals.txt"
                + " --batch-max " + inf.batch() + " --max-wait-ms " + inf.maxWaitMs() + " --kernels " + inf.kernels()
                + " --blocks " + GpuColocation.scaled(inf.blocks(), 132) + " --block-us " + inf.blockUs()
                + " --period-ms 5.0");
        Training t = (Training) ColocationBench.TRAIN_INF.workloads().get(1);
        List<String> train = GpuColocation.command(t, 108, "1", 9, null, 5);
        assertThat(String.join(" ", train)).isEqualTo("train --iters 1 --seconds 9 --kernels " + t.kernels() + " --blocks "
                + t.blocks() + " --block-us " + t.blockUs() + " --gap-ms " + t.gapMs() + " --period-ms 5.0");
    }

    @Test
    void theIssuesBarsAreJudgedOnTheFigures() {
        Map<Mode, Outcome> o = trainInf(Map.of(Mode.EXCLUSIVE, new double[] {10, 1000}, Mode.NO_CONTROL,
                new double[] {15, 900}, Mode.MPS_L, new double[] {20, 800}, Mode.MPS_R, new double[] {12, 500},
                Mode.DILU, new double[] {13.1, 650}));
        List<Bar> bars = GpuColocation.bars(ColocationBench.TRAIN_INF, o);
        assertThat(bars).extracting(Bar::met).containsExactly(false, true, true, true, false);
        assertThat(bars.getFirst().figure()).isEqualTo("1.310");
        assertThat(bars.get(4).what()).isEqualTo("Dilu's inference p95 below MPS-r's");
        o.put(Mode.DILU, trainInf(Map.of(Mode.DILU, new double[] {11.9, 590})).get(Mode.DILU));
        assertThat(GpuColocation.bars(ColocationBench.TRAIN_INF, o)).extracting(Bar::met)
                .containsExactly(true, false, true, true, true);
    }

    @Test
    void mpsWaysThatDidNotRunReadSkippedAndAreNotJudged() {
        Map<Mode, Outcome> o = trainInf(Map.of(Mode.EXCLUSIVE, new double[] {10, 1000}, Mode.NO_CONTROL,
                new double[] {15, 900}, Mode.DILU, new double[] {12, 700}));
        String figures = ColocationBench.figures(ColocationBench.TRAIN_INF, o);
        assertThat(figures).contains(" inference_p95_vs_exclusive=1.200 ", " mps_l_p95_vs_exclusive=skipped ",
                " mps_r_training_vs_exclusive=skipped ", " emergency_periods=42");
        assertThat(GpuColocation.bars(ColocationBench.TRAIN_INF, o)).extracting(Bar::met)
                .containsExactly(true, true, true, null, null);
        Map<Mode, Outcome> infInf = new EnumMap<>(Mode.class);
        for (Mode m : List.of(Mode.EXCLUSIVE, Mode.NO_CONTROL, Mode.DILU)) {
            infInf.put(m, new Outcome(Map.of("steady", new double[] {1, 2}, "bursty", new double[] {1, 3}), Map.of(), 0,
                    HOST));
        }
        assertThat(ColocationBench.figures(ColocationBench.INF_INF, infInf))
                .contains(" best_static_worst_p95_vs_exclusive=skipped ");
    }

    @Test
    void theDiagnosticsAreWellFormedKeysPerWorkload() {
        Scenario s = ColocationBench.TRAIN_TRAIN;
        Map<Mode, GpuColocation.Way> ways = new EnumMap<>(Mode.class);
        for (Mode m : List.of(Mode.EXCLUSIVE, Mode.DILU)) {
            Map<String, GpuCheck.Line> lines = new LinkedHashMap<>();
            for (var w : s.workloads()) {
                lines.put(w.name(), new GpuCheck.Line("train", Map.of("blocks_per_s", "1000", "kernel_ms_p95",
                        m == Mode.DILU ? "6.5" : "0.4", "kernels_over_period", m == Mode.DILU ? "0.25" : "0",
                        "cycle_ms_min", "3.2")));
            }
            ways.put(m, new GpuColocation.Way(new Outcome(Map.of(), Map.of(), 0, HOST), lines, 400, Map.of()));
        }
        String keys = GpuColocation.diagnostics(new GpuColocation.Result(s, ways, Map.of()));
        assertThat(keys).matches("( [a-z0-9_]+=[^ =]+)+");
        assertThat(keys).contains(" dilu_periods=400", " train_a_kernel_p95_ms_exclusive=0.400",
                " train_b_kernel_p95_ms_dilu=6.500", " train_b_over_period_dilu=0.2500").doesNotContain("klc_ref");
        GpuDevice device = new GpuDevice("GPU-x", 0, "NVIDIA H100 80GB HBM3", 81_559, 132);
        assertThat(GpuCheck.label(new GpuCheck.Gpu(device, false, "nvml"))).isEqualTo("NVIDIA_H100_80GB_HBM3");
    }
}
