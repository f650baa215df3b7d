package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.testing.ShippedConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The node agent ships core's token defaults, and a key it is given overrides that key alone. */
class NodeAgentConfigTest {

    static NodeAgentConfig shipped(Map<String, String> keys) {
        return ShippedConfig.read(NodeAgentConfig.class, keys);
    }

    @Test
    void asShippedTheTokenKnobsAreCoresDefaults() {
        assertThat(shipped(Map.of()).tokens()).isEqualTo(TokenParameters.DEFAULTS);
    }

    @Test
    void eachKnobGivenReplacesThatKnobOnly() {
        TokenParameters d = TokenParameters.DEFAULTS;
        assertThat(shipped(Map.of("dilu.agent.eta-violation", "2")).tokens()).isEqualTo(d.withEtaViolation(2));
        assertThat(shipped(Map.of("dilu.agent.period", "10ms")).tokens())
                .isEqualTo(d.withPeriod(Duration.ofMillis(10)));
    }

    @Test
    void eachGpuIsWorthItsOwnSmsAtTheConfiguredPeriod() {
        List<GpuDevice> gpus = List.of(new GpuDevice("GPU-a100", 0, "A100-40GB", 40_960, 108),
                new GpuDevice("GPU-h100", 1, "H100-80GB", 81_920, 132));
        assertThat(NodeAgent.tokenParameters(shipped(Map.of()), gpus)).extracting(TokenParameters::maxTokens)
                .containsExactly(5_400L, 6_600L);
        NodeAgentConfig slower = shipped(Map.of("dilu.agent.period", "10ms", "dilu.agent.eta-violation", "1.4"));
        TokenParameters node = TokenParameters.DEFAULTS.withPeriod(Duration.ofMillis(10)).withEtaViolation(1.4);
        assertThat(NodeAgent.tokenParameters(slower, gpus)).containsExactly(node.withMaxTokens(10_800),
                node.withMaxTokens(13_200));
    }
}
