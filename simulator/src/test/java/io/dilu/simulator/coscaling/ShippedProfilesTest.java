package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import io.dilu.core.profiling.InferenceProfile;
import io.dilu.trials.EmulatedModels;
import io.dilu.trials.TestingEmulatedGpu;
import org.junit.jupiter.api.Test;

/**
 * The profiles shipped for the co-scaling bench against the emulator's arithmetic ({@link TestingEmulatedGpu}, exact):
 * the file was written from real trials, whose times the emulator computes the same way up to the float rounding of
 * event times (ProcessTrialIT; ShippedProfilesIT re-profiles with the real workloads). Tolerance 0.1%.
 */
class ShippedProfilesTest {

    @Test
    void bertLargeIsWhatTheProfilerFindsOnTheEmulatedGpu() throws Exception {
        InferenceProfile now = ShippedProfiles.assertStillFound(EmulatedModels.BERT_LARGE,
                new TestingEmulatedGpu(EmulatedModels.BERT_LARGE), 0.001);
        assertThat(now.trials()).as("7 of the search, 1 at the limit").isEqualTo(8);
    }

    @Test
    void theBenchsFunctionIsBertLargeAsShipped() {
        FunctionProfile f = FunctionProfiles.bench();
        assertThat(f.name()).isEqualTo("bert-large");
        assertThat(f.sloSeconds()).isEqualTo(0.13);
        assertThat(f.requestShare()).isEqualTo(0.1);
        assertThat(f.limitShare()).isEqualTo(0.2);
        // Batch 4 at SM 10: 120 kernels of 212 blocks in 20 waves of 11 SMs, 27 us each; at SM 20, 10 waves of 22.
        assertThat(f.serviceSeconds()).isCloseTo(0.0648, offset(1e-6));
        assertThat(f.rpsAtRequest()).isCloseTo(4 / 0.0648, offset(1e-3));
        assertThat(f.rpsAtLimit()).isCloseTo(4 / 0.0324, offset(1e-3));
        // Not measured: Amdahl's law through the two shares. Halving the waves is linear, so 10x SM 10's rate, which
        // is exactly the arithmetic's SM 100 (2 waves of 108).
        assertThat(f.rpsAtWholeGpu()).isCloseTo(4 / (120 * 2 * 27e-6), offset(0.1));
        assertThat(f.memoryMiB()).isEqualTo(639 + 4 * 8);
        assertThat(f.coldStartSeconds()).isEqualTo(FunctionProfile.DEFAULT_COLD_START_SECONDS);
    }
}
