package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.trials.EmulatedModels;
import io.dilu.trials.LocalProfiling;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The profiles shipped for the co-scaling bench (coscaling/profiles/) against what the profiler finds now, re-profiling
 * each model with the real workloads on the emulated GPU, every trial a process ({@link ShippedProfiles} says what must
 * agree). Tolerance 10%: a host stalled for a whole batch stretches that batch, and a trial's mean is over 10 of them
 * (docs/profiler.md); emulated times are otherwise exact, so a setting that no longer agrees is a changed model or a
 * changed search, and the file is to be written again ({@code ./dilu profile --local --model NAME --out
 * simulator/src/main/resources/coscaling/profiles}).
 */
class ShippedProfilesIT {

    @Test
    void bertLargeStillProfilesAsShipped() throws Exception {
        Path nativeDir = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake")).toAbsolutePath();
        assertThat(Files.isExecutable(nativeDir.resolve("bin/emu-infer")))
                .as("the native build (hook-native, built before this module) has bin/emu-infer in %s", nativeDir).isTrue();
        ShippedProfiles.assertStillFound(EmulatedModels.BERT_LARGE, LocalProfiling.processes(nativeDir).apply(EmulatedModels.BERT_LARGE),
                0.10);
    }
}
