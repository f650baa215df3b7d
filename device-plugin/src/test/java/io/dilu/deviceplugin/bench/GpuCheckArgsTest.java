package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class GpuCheckArgsTest {

    private static GpuCheck.Args parse(String... args) {
        return GpuCheck.Args.parse(args);
    }

    @Test
    void eachKindOfRunHasItsLength() {
        assertThat(parse("native").seconds()).isEqualTo(GpuCheck.SECONDS);
        assertThat(parse("native").colocation()).isFalse();
        GpuCheck.Args colocation = parse("native", "--colocation");
        assertThat(colocation.seconds()).isEqualTo(GpuCheck.COLOCATION_SECONDS);
        assertThat(colocation.wanted()).as("every scenario").isEmpty();
        GpuCheck.Args smoke = parse("native", "--colocation", "--smoke", "inf-inf");
        assertThat(smoke.seconds()).isEqualTo(GpuCheck.SMOKE_SECONDS);
        assertThat(smoke.smoke()).isTrue();
        assertThat(smoke.wanted()).containsExactly("inf-inf");
        assertThat(parse("native", "--seconds", "7", "--colocation").seconds()).isEqualTo(7);
    }

    @Test
    void anUnknownScenarioIsRefusedNamingTheOnesThereAre() {
        assertThatThrownBy(() -> parse("native", "--colocation", "train-infer"))
                .hasMessage("SCENARIO must be one of train-inf, inf-inf, train-train, got 'train-infer'");
    }

    @Test
    void optionsThatDoNotGoTogetherAreRefusedByName() {
        List.of(List.of("native", "--smoke"), List.of("native", "inf-inf")).forEach(args ->
                assertThatThrownBy(() -> parse(args.toArray(String[]::new))).hasMessageEndingWith("goes with --colocation"));
        assertThatThrownBy(() -> parse("native", "--colocation", "--smoke", "--seconds", "5"))
                .hasMessage("--smoke sets the runs' length: give no --seconds with it");
        assertThatThrownBy(() -> parse("native", "--seconds", "0"))
                .hasMessage("--seconds must be a whole number in 1..600, got 0");
        assertThatThrownBy(() -> parse("native", "--seconds"))
                .hasMessage("--seconds must be a whole number in 1..600, got nothing");
        assertThatThrownBy(() -> parse("native", "--colocations")).hasMessageStartingWith("unknown option --colocations");
        assertThatThrownBy(() -> parse("--colocation")).hasMessageContaining("native build directory");
    }
}
