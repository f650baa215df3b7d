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
                DiluNames.BATCH_SIZE, "0", DiluNames.ASSIGNED_GPUS, "GPU-a,,");
        assertThat(PodQuotaAnnotations.validate(a, 30)).extracting(FieldError::message).containsExactly(
                "dilu.io/sm-limit=20 is not allowed: must be an integer percent in 30..100 (request..100)",
                "dilu.io/priority=urgent is not allowed: must be one of slo, best-effort",
                "dilu.io/batch-size=0 is not allowed: must be an integer of at least 1",
                "dilu.io/assigned-gpus=GPU-a,, is not allowed: must be " + AssignedGpus.ALLOWED);
        assertThat(PodQuotaAnnotations.smLimit(a, 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.priority(a, Priority.SLO)).isEqualTo(Priority.SLO);
        assertThat(PodQuotaAnnotations.smLimit(Map.of(DiluNames.SM_LIMIT, "101"), 30)).isEqualTo(60);
        assertThat(PodQuotaAnnotations.smLimit(Map.of(DiluNames.SM_LIMIT, "99999999999"), 30)).isEqualTo(60);
    }
}
