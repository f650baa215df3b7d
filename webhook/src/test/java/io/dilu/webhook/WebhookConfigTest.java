package io.dilu.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.testing.ShippedConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The webhook judges KLC thresholds against the nodes' default unless it is told the nodes run at another. */
class WebhookConfigTest {

    static WebhookConfig shipped(Map<String, String> keys) {
        return ShippedConfig.read(WebhookConfig.class, keys);
    }

    @Test
    void asShippedTheThresholdIsCoresDefault() {
        assertThat(shipped(Map.of()).nodeEtaViolation()).isEqualTo(TokenParameters.DEFAULTS.etaViolation());
        assertThat(shipped(Map.of("dilu.webhook.eta-violation", "2")).nodeEtaViolation()).isEqualTo(2.0);
        assertThatThrownBy(() -> shipped(Map.of("dilu.webhook.eta-violation", "0.9")).nodeEtaViolation())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("etaViolation must be in (1, 10.0]");
    }
}
