package io.dilu.core.contract;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Priority;
import io.dilu.core.tokens.TokenParameters;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QuotaRightsTest {

    private static final double NODE = TokenParameters.DEFAULTS.etaViolation();
    private static final Map<String, String> GREEDY = Map.of(DiluNames.PRIORITY, "slo", DiluNames.SM_LIMIT, "100",
            DiluNames.KLC_THRESHOLD, "1.05");

    @Test
    void withoutTheRightEachGreedyQuotaIsNamed() {
        assertThat(QuotaRights.violations(GREEDY, 10, false, NODE)).extracting(FieldError::message).containsExactly(
                "dilu.io/priority=slo is not allowed: must be best-effort unless the namespace has the label "
                        + "dilu.io/allow-slo=true (granted by an administrator)",
                "dilu.io/sm-limit=100 is not allowed: must be at most 20 (min(100, 2 × request)) unless the namespace "
                        + "has the label dilu.io/allow-slo=true (granted by an administrator)",
                "dilu.io/klc-threshold=1.05 is not allowed: must be at least 1.6 unless the namespace has the label "
                        + "dilu.io/allow-slo=true (granted by an administrator)");
        assertThat(QuotaRights.violations(Map.of(DiluNames.LLM, "true"), 10, false, NODE)).singleElement().asString()
                .startsWith("dilu.io/llm=true is not allowed: must be false");
        assertThat(QuotaRights.violations(GREEDY, 10, true, NODE)).isEmpty();
        assertThat(QuotaRights.violations(Map.of(DiluNames.SM_LIMIT, "20", DiluNames.KLC_THRESHOLD, "2"), 10, false, NODE))
                .as("the defaults and anything gentler need no right").isEmpty();
    }

    @Test
    void theAgentClampsWhatWasNotGranted() {
        assertThat(QuotaRights.grant(GREEDY, 10, Priority.BEST_EFFORT, false, NODE))
                .isEqualTo(new QuotaRights.PodQuota(20, Priority.BEST_EFFORT, Double.NaN));
        assertThat(QuotaRights.grant(GREEDY, 10, Priority.BEST_EFFORT, true, NODE))
                .isEqualTo(new QuotaRights.PodQuota(100, Priority.SLO, 1.05));
        assertThat(QuotaRights.granted(Map.of(QuotaRights.ALLOW_SLO_LABEL, "true"))).isTrue();
        assertThat(QuotaRights.granted(Map.of(QuotaRights.ALLOW_SLO_LABEL, "yes"))).isFalse();
        assertThat(QuotaRights.granted(null)).isFalse();
    }

    @Test
    void aThresholdIsJudgedAgainstTheNodesOwn() {
        Map<String, String> asks = Map.of(DiluNames.KLC_THRESHOLD, "1.8");
        assertThat(QuotaRights.violations(asks, 10, false, NODE)).as("above the default 1.6").isEmpty();
        assertThat(QuotaRights.violations(asks, 10, false, 2.0)).extracting(FieldError::message).containsExactly(
                "dilu.io/klc-threshold=1.8 is not allowed: must be at least 2.0 unless the namespace has the label "
                        + "dilu.io/allow-slo=true (granted by an administrator)");
        assertThat(QuotaRights.violations(Map.of(DiluNames.LLM, "true"), 10, false, 1.2)).as("1.3 on a 1.2 node").isEmpty();
        assertThat(QuotaRights.grant(asks, 10, Priority.BEST_EFFORT, false, NODE).klcThreshold()).isEqualTo(1.8);
        assertThat(QuotaRights.grant(asks, 10, Priority.BEST_EFFORT, false, 2.0).klcThreshold()).as("the node's, then").isNaN();
    }
}
