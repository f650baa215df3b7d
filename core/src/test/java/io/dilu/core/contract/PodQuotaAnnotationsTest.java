package io.dilu.core.contract;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Priority;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PodQuotaAnnotationsTest {

    @Test
    void validAnnotationsAreRead() {
        Map<String, String> a = Map.of(DiluNames.SM_LIMIT, "60", DiluNames.PRIORITY, "slo", DiluNames.BATCH_SIZE, "8");
        assertThat(PodQuotaAnnotations.validate(a, 30)).isEmpty();
        assertThat(PodQuotaAnnotations.smLimit(a, 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.priority(a, Priority.BEST_EFFORT)).isEqualTo(Priority.SLO);
    }

    @Test
    void missingAnnotationsTakeTheDefaults() {
        assertThat(PodQuotaAnnotations.validate(Map.of(), 70)).isEmpty();
        assertThat(PodQuotaAnnotations.smLimit(Map.of(), 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.smLimit(Map.of(), 70)).isEqualTo(100);
        assertThat(PodQuotaAnnotations.priority(Map.of(), Priority.BEST_EFFORT)).isEqualTo(Priority.BEST_EFFORT);
    }

    @Test
    void badValuesAreNamedWithTheirRangeAndReadAsDefaults() {
        Map<String, String> a = Map.of(DiluNames.SM_LIMIT, "20", DiluNames.PRIORITY, "urgent",
                DiluNames.BATCH_SIZE, "0", DiluNames.ASSIGNED_GPUS, "GPU-a,,", DiluNames.SPLIT, "tensor");
        assertThat(PodQuotaAnnotations.validate(a, 30)).extracting(FieldError::message).containsExactly(
                "dilu.io/sm-limit=20 is not allowed: must be an integer percent in 30..100 (request..100)",
                "dilu.io/priority=urgent is not allowed: must be one of slo, best-effort",
                "dilu.io/batch-size=0 is not allowed: must be an integer of at least 1",
                "dilu.io/split=tensor is not allowed: must be pipeline",
                "dilu.io/assigned-gpus=GPU-a,, is not allowed: must be " + AssignedGpus.ALLOWED);
        assertThat(PodQuotaAnnotations.smLimit(a, 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.priority(a, Priority.SLO)).isEqualTo(Priority.SLO);
        assertThat(PodQuotaAnnotations.smLimit(Map.of(DiluNames.SM_LIMIT, "101"), 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.smLimit(Map.of(DiluNames.SM_LIMIT, "99999999999"), 30)).isEqualTo(60);
    }

    @Test
    void theKlcThresholdComesFromTheAnnotationOrTheLlmMark() {
        assertThat(PodQuotaAnnotations.klcThreshold(Map.of())).isNaN();
        assertThat(PodQuotaAnnotations.klcThreshold(Map.of(DiluNames.KLC_THRESHOLD, "2.5"))).isEqualTo(2.5);
        assertThat(PodQuotaAnnotations.klcThreshold(Map.of(DiluNames.LLM, "true"))).isEqualTo(1.3);
        assertThat(PodQuotaAnnotations.klcThreshold(Map.of(DiluNames.LLM, "true", DiluNames.KLC_THRESHOLD, "1.5")))
                .as("an explicit threshold wins").isEqualTo(1.5);
        assertThat(PodQuotaAnnotations.validate(Map.of(DiluNames.KLC_THRESHOLD, "1", DiluNames.LLM, "yes"), 30))
                .extracting(FieldError::message).containsExactly(
                        "dilu.io/klc-threshold=1 is not allowed: must be a ratio in (1, 10], e.g. 1.6",
                        "dilu.io/llm=yes is not allowed: must be true or false");
        for (String bad : new String[] {"0.9", "11", "1e9", "NaN", "-2", "1.6.1", "", "9999999999999"}) {
            assertThat(PodQuotaAnnotations.klcThreshold(Map.of(DiluNames.KLC_THRESHOLD, bad))).as(bad).isNaN();
            assertThat(PodQuotaAnnotations.validate(Map.of(DiluNames.KLC_THRESHOLD, bad), 30)).as(bad).hasSize(1);
        }
    }
}
