package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.simulator.bench.PreAffinityPlacement;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlacementBenchTest {

    @Test
    void timesBothSearchesInOneRunAndFailsExactlyWhenItSaysSo() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = PlacementBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), 300, 7, 1, 3, true);
        String out = bytes.toString(StandardCharsets.UTF_8);
        List<String> lines = out.lines().toList();
        assertThat(lines.getLast()).matches("BENCH placement instances=300 seconds=\\S+ seconds_previous=\\S+ ratio=\\S+ "
                + "ratio_bar=1.50 gpus_dilu=\\d+ gpus_previous=\\d+ gpus_exclusive=\\d+ gpus_static_limit=\\d+");
        assertThat(out).contains("before the affinity (72b749d^)");
        // Whether it failed depends on this machine's timing, which a test must not judge; only that the verdict,
        // the message and the exit status agree.
        assertThat(out.contains("FAIL: today's search takes")).isEqualTo(exit == 1);
        assertThat(exit).isIn(0, 1);
        assertThat(PlacementBench.tooSlow(1.5)).isFalse();
        assertThat(PlacementBench.tooSlow(1.51)).isTrue();
    }

    @Test
    void aSmokeRunPrintsTheRatioAndNeverFailsOnIt() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = PlacementBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), 300, 7, 1, 3, false);
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(exit).isZero();
        assertThat(out).contains("not judged in a smoke run").doesNotContain("FAIL:");
        assertThat(out.lines().toList().getLast()).startsWith("BENCH placement instances=300 ");
    }

    @Test
    void thePreAffinityCopyPlacesThePapersMixAsTheSearchDidBefore72b749d() {
        List<SimInstance> mix = PaperMix.generate(PaperMix.PAPER_INSTANCES, PaperMix.DEFAULT_SEED);
        PreAffinityPlacement.Result previous = PreAffinityPlacement.place(ClusterShape.PAPER.nodesFor(mix),
                mix.stream().map(SimInstance::toRequest).toList());
        // docs/benchmarks.md, "placement", 2026-11-22: 2,450 GPUs before the paper's affinity
        assertThat(previous.gpus()).isEqualTo(2450);
        assertThat(previous.infeasible()).isZero();
    }
}
