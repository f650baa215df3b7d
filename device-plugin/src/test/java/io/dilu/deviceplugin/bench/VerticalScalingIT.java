package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Vertical scaling end to end on the emulated GPU with the real hook in real processes: an SLO inference
 * server (30%/60%) beside a training loop (40%/100%) under a bursty load, compared in one run with static
 * shares capped at the request and with no control. Emulated figures.
 */
class VerticalScalingIT {

    private static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));

    @Test
    void diluProtectsInferenceBetterThanStaticSharesWithoutStarvingTraining() throws Exception {
        ColocationBench.Comparison c = ColocationBench.compare(NATIVE, 8, 0.25);
        double p95 = c.p95VsExclusive(c.dilu());
        double staticP95 = c.p95VsExclusive(c.staticShares());
        double training = c.trainingVsExclusive(c.dilu());
        double staticTraining = c.trainingVsExclusive(c.staticShares());
        assertThat(p95).as("inference p95 vs Exclusive: dilu %.3f, static %.3f", p95, staticP95).isLessThan(staticP95);
        assertThat(p95).as("inference p95 vs Exclusive").isLessThanOrEqualTo(1.45);
        assertThat(training).as("training vs Exclusive: dilu %.3f, static %.3f", training, staticTraining)
                .isGreaterThanOrEqualTo(staticTraining);
        assertThat(c.p95VsExclusive(c.noControl())).as("no control slows inference down").isGreaterThan(1.0);
    }
}
