package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.StaticQuotaPlacement;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class PaperMixTest {

    private final List<SimInstance> mix = PaperMix.generate(3_200, PaperMix.DEFAULT_SEED);

    @Test
    void followsThePapersProportionsAndRanges() {
        Map<InstanceType, Long> byType = mix.stream().collect(Collectors.groupingBy(SimInstance::type, Collectors.counting()));
        assertThat(byType.get(InstanceType.INFERENCE) / 3200.0).isBetween(0.57, 0.63);
        assertThat(byType.get(InstanceType.LLM_INFERENCE) / 3200.0).isBetween(0.17, 0.23);
        assertThat(byType.get(InstanceType.TRAINING) / 3200.0).isBetween(0.17, 0.23);
        for (SimInstance i : mix) {
            switch (i.type()) {
                case INFERENCE -> {
                    assertThat(i.gpus()).isEqualTo(1);
                    assertThat(i.smRequest()).isBetween(0.20, 0.40);
                    assertThat(i.smLimit()).isCloseTo(i.smRequest() + 0.20, org.assertj.core.data.Offset.offset(1e-12));
                    assertThat(i.memoryMib() % 1024).isZero();
                    assertThat(i.memoryMib() / 1024).isBetween(3L, 10L);
                }
                case LLM_INFERENCE -> {
                    assertThat(i.smRequest()).isBetween(0.40, 0.60);
                    assertThat(i.memoryMib() / 1024).isBetween(20L, 30L);
                }
                case TRAINING -> {
                    assertThat(i.gpus()).isIn(2, 4);
                    assertThat(i.smRequest()).isBetween(0.40, 0.80);
                    assertThat(i.smLimit()).isEqualTo(Math.min(1.0, i.smRequest() + 0.20));
                    assertThat(i.memoryMib()).isBetween(25L * 1024, 40L * 1024);
                }
            }
        }
    }

    @Test
    void isTheSameForTheSameSeed() {
        assertThat(PaperMix.generate(3_200, PaperMix.DEFAULT_SEED)).isEqualTo(mix);
        assertThat(PaperMix.generate(3_200, 1)).isNotEqualTo(mix);
    }

    @Test
    void diluNeedsFewerGpusThanBothBaselinesAndPlacesEverything() {
        var nodes = ClusterShape.PAPER.nodesFor(mix);
        var requests = mix.stream().map(SimInstance::toRequest).toList();
        var dilu = PlacementSimulation.run(new ComplementaryPlacement(), nodes, requests);
        var exclusive = PlacementSimulation.run(new ExclusivePlacement(), nodes, requests);
        var staticLimit = PlacementSimulation.run(new StaticQuotaPlacement(), nodes, requests);
        assertThat(List.of(dilu, exclusive, staticLimit)).allSatisfy(r -> {
            assertThat(r.placed()).isEqualTo(3_200);
            assertThat(r.infeasible()).isZero();
        });
        assertThat(exclusive.gpus()).isEqualTo(mix.stream().mapToInt(SimInstance::gpus).sum());
        assertThat(dilu.gpus()).isLessThan(staticLimit.gpus()).isLessThan(exclusive.gpus());
    }
}
