package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import io.dilu.core.profiling.Measurement;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Trials as processes of the real workloads on the real emulated GPU (the native build, -Ddilu.native.dir).
 * Emulated times are exact below (the kernels' waves, {@link TestingEmulatedGpu}) and only a host stalled for
 * a whole batch stretches them, so each latency is asserted at least its exact value and settings are
 * compared where their exact times differ by twice or more.
 */
class ProcessTrialIT {

    private static Path nativeDir;

    @BeforeAll
    static void nativeBuild() {
        nativeDir = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake")).toAbsolutePath();
        assertThat(Files.isExecutable(nativeDir.resolve("bin/emu-infer")))
                .as("the native build (hook-native, built before this module) has bin/emu-infer in %s", nativeDir).isTrue();
    }

    private static ReportingTrial trial(EmulatedModel m) {
        return LocalProfiling.processes(nativeDir).apply(m);
    }

    private static double exactMs(EmulatedModel m, int sm, int batch) {
        return new TestingEmulatedGpu(m).computeSeconds(sm, batch) * 1000;
    }

    @Test
    void latencyGrowsWithTheBatchAndFallsWithTheSmShare() {
        ReportingTrial resnet = trial(EmulatedModels.RESNET50);
        int[][] settings = {{10, 1}, {10, 8}, {10, 32}, {30, 32}, {100, 32}};
        double[] ms = new double[settings.length];
        for (int i = 0; i < settings.length; i++) {
            TrialRun r = resnet.attempt(settings[i][0], settings[i][1]);
            assertThat(r.failure()).isEmpty();
            Measurement m = r.measurement();
            ms[i] = m.latencyMillis();
            assertThat(ms[i]).as("SM %d batch %d", settings[i][0], settings[i][1])
                    .isGreaterThanOrEqualTo(exactMs(EmulatedModels.RESNET50, settings[i][0], settings[i][1]) - 1e-3);
            // The batch it was given, through DILU_BATCH_SIZE: throughput is that many requests per batch time.
            assertThat(m.throughput() * m.latencyMillis() / 1000).isCloseTo(settings[i][1], offset(1e-3));
        }
        // Batch at SM 10: 1.08, 4.32, 16.2 ms exactly; SM at batch 32: 16.2, 5.4, 2.16 ms.
        assertThat(ms[0]).isLessThan(ms[1]);
        assertThat(ms[1]).isLessThan(ms[2]);
        assertThat(ms[2]).isGreaterThan(ms[3]);
        assertThat(ms[3]).isGreaterThan(ms[4]);
    }

    @Test
    void aBatchThatDoesNotFitInMemoryIsAFailedTrialSayingSo() {
        ReportingTrial llama = trial(EmulatedModels.LLAMA2_7B);
        TrialRun fits = llama.attempt(100, 8);
        assertThat(fits.report()).hasValueSatisfying(r -> assertThat(r.memoryMib()).isEqualTo(12853 + 8 * 2048));

        TrialRun tooBig = llama.attempt(100, 16);
        assertThat(tooBig.report()).isEmpty();
        assertThat(tooBig.failure()).startsWith("exited with 3: cannot allocate the model's activations, 32768 MiB")
                .contains("out of memory");
        assertThat(tooBig.measurement().latencyMillis()).isInfinite();
    }

    @Test
    void trainingThroughputFallsWithTheSmShare() {
        ReportingTrial job = trial(EmulatedModels.RESNET50_TRAINING);
        TrialRun whole = job.attempt(100, 1);
        TrialRun half = job.attempt(50, 1);
        double gapMs = 14;
        assertThat(whole.measurement().latencyMillis())
                .isGreaterThanOrEqualTo(exactMs(EmulatedModels.RESNET50_TRAINING, 100, 1) + gapMs - 1e-3);
        // 12 waves against 24 of the same kernels, each iteration then 14 ms of communication.
        assertThat(half.measurement().latencyMillis())
                .isGreaterThanOrEqualTo(exactMs(EmulatedModels.RESNET50_TRAINING, 50, 1) + gapMs - 1e-3);
        assertThat(half.measurement().throughput()).isLessThan(whole.measurement().throughput());
        assertThat(whole.measurement().throughput() * whole.measurement().latencyMillis() / 1000)
                .isCloseTo(1, offset(1e-6));
    }
}
