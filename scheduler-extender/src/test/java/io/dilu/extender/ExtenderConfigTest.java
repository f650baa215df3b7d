package io.dilu.extender;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.quota.Quota;
import io.dilu.testing.ShippedConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The extender ships core's placement defaults, and a key it is given overrides that key alone. */
class ExtenderConfigTest {

    static ExtenderConfig shipped(Map<String, String> keys) {
        return ShippedConfig.read(ExtenderConfig.class, keys);
    }

    @Test
    void asShippedThePlacementIsCoresDefault() {
        assertThat(shipped(Map.of()).placement()).isEqualTo(PlacementParameters.DEFAULTS);
    }

    @Test
    void asShippedAContainerWithoutMemoryIsBookedWhatTheNodeAgentHoldsItTo() {
        assertThat(shipped(Map.of()).defaultMemoryMib()).isEqualTo(Quota.DEFAULT_MEMORY_MIB);
        assertThat(shipped(Map.of("dilu.extender.default-memory-mib", "2048")).defaultMemoryMib()).isEqualTo(2048);
    }

    @Test
    void eachKnobGivenReplacesThatKnobOnly() {
        PlacementParameters d = PlacementParameters.DEFAULTS;
        assertThat(shipped(Map.of("dilu.extender.omega", "1.2", "dilu.extender.beta", "0.7")).placement())
                .isEqualTo(d.withOmegaGamma(1.2, d.gamma()).withWeights(d.alpha(), 0.7));
        assertThat(shipped(Map.of("dilu.extender.gamma", "2", "dilu.extender.alpha", "0.1", "dilu.extender.fragmentation", "20"))
                .placement()).isEqualTo(d.withOmegaGamma(d.omega(), 2).withWeights(0.1, d.beta()).withFragmentation(20));
    }
}
