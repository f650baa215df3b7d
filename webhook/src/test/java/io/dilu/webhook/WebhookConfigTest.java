package io.dilu.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.testing.ShippedConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The webhook judges KLC thresholds against the nodes' default unless it is told the nodes run at another. */
class WebhookConfigTest {

    /** The configuration as the webhook reads it: its defaults and its application.properties, over {@code keys}. */
    static WebhookConfig read(Map<String, String> keys) {
        return ShippedConfig.withProperties(keys, WebhookConfig.class).getConfigMapping(WebhookConfig.class);
    }

    @Test
    void asShippedTheThresholdIsCoresDefault() {
        assertThat(read(Map.of()).nodeEtaViolation()).isEqualTo(TokenParameters.DEFAULTS.etaViolation());
        assertThat(read(Map.of("dilu.webhook.eta-violation", "2")).nodeEtaViolation()).isEqualTo(2.0);
    }
}
