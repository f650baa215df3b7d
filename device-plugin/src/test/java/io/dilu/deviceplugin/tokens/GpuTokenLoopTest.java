package io.dilu.deviceplugin.tokens;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.control.FakeHook;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One GPU's periods over real control block files, the hook played by {@link FakeHook}. */
class GpuTokenLoopTest {

    private static final TokenParameters PARAMS = TokenParameters.DEFAULTS.withMaxTokens(5_400);

    @TempDir
    Path tmp;

    @Test
    void aBestEffortRefillNextToAnSloTenantIsPacedByTheHookAndTheNextPeriodStartsFromItsEnd() throws Exception {
        ControlBlock inference = ControlBlock.create(tmp.resolve("inference"), 1);
        ControlBlock training = ControlBlock.create(tmp.resolve("training"), 1);
        FakeHook trainingHook = FakeHook.of(training);
        GpuTokenLoop loop = new GpuTokenLoop(PARAMS, 5);
        loop.add(new Tenant("inference", inference, 0, 0.3, 0.6, true));
        loop.add(new Tenant("training", training, 0, 0.4, 0.8, false));
        Instant t = Instant.parse("2026-11-23T00:00:00Z");

        var first = loop.tick(t, 1_000_000);
        long tokens = first.tokensOf("training");
        assertThat(first.state()).isNotEqualTo(ControllerState.NONE);
        assertThat(tokens).as("training is granted something").isPositive();
        assertThat(training.pacedUntil(0)).as("the period's end").isEqualTo(tokens);
        assertThat(training.tokensGranted(0)).as("only the first of five parts at once").isEqualTo(tokens / 5);
        assertThat(inference.tokensGranted(0)).as("an SLO tenant gets all at once")
                .isEqualTo(inference.pacedUntil(0)).isEqualTo(first.tokensOf("inference"));

        trainingHook.setBlocksLaunched(tokens); // it used every part the hook released
        var second = loop.tick(t.plusMillis(5), 6_000_000);

        assertThat(training.pacedUntil(0)).as("the second period starts where the first ended")
                .isEqualTo(tokens + second.tokensOf("training"));
    }

    @Test
    void withoutAnSloNeighbourNothingIsPaced() throws Exception {
        ControlBlock training = ControlBlock.create(tmp.resolve("alone"), 1);
        GpuTokenLoop loop = new GpuTokenLoop(PARAMS, 5);
        loop.add(new Tenant("training", training, 0, 0.4, 0.8, false));

        var plan = loop.tick(Instant.parse("2026-11-23T00:00:00Z"), 1_000_000);

        assertThat(plan.state()).isEqualTo(ControllerState.NONE);
        assertThat(training.tokensGranted(0)).isEqualTo(plan.tokensOf("training")).isPositive();
    }
}
