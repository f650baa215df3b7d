package io.dilu.core.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class QuotaTest {

    @Test
    void acceptsAValidQuota() {
        Quota q = Quota.of(30, 60, 4096, 8, Priority.SLO);
        assertThat(q.requestMilli()).isEqualTo(300);
        assertThat(q.limitMilli()).isEqualTo(600);
    }

    @ParameterizedTest(name = "request={0} limit={1} memory={2} batch={3} -> {4}")
    @CsvSource({
        "0, 50, 100, 1, smRequest, 1..100",
        "101, 100, 100, 1, smRequest, 1..100",
        "-5, 50, 100, 1, smRequest, 1..100",
        "40, 30, 100, 1, smLimit, 40..100",
        "40, 101, 100, 1, smLimit, 40..100",
        "40, 80, 0, 1, memoryMib, at least 1",
        "40, 80, -1, 1, memoryMib, at least 1",
        "40, 80, 100, 0, batchSize, at least 1",
    })
    void refusesNamingTheFieldAndTheRange(int request, int limit, long memory, int batch, String field, String range) {
        List<FieldError> errors = Quota.validate(request, limit, memory, batch, Long.MAX_VALUE);
        assertThat(errors).extracting(FieldError::field).contains(field);
        assertThat(errors.stream().filter(e -> e.field().equals(field)).findFirst().orElseThrow().message())
                .contains(field).contains(range);
    }

    @Test
    void memoryIsBoundedByTheLargestGpu() {
        assertThat(Quota.validate(10, 20, 40_961, 1, 40_960))
                .singleElement()
                .satisfies(e -> assertThat(e.message()).isEqualTo(
                        "memoryMib=40961 is not allowed: must be in 1..40960 (the largest GPU)"));
    }

    @Test
    void ofListsEveryBadField() {
        assertThatThrownBy(() -> Quota.of(0, 200, -1, 0, null))
                .isInstanceOf(InvalidQuotaException.class)
                .satisfies(e -> assertThat(((InvalidQuotaException) e).errors()).extracting(FieldError::field)
                        .containsExactly("smRequest", "smLimit", "memoryMib", "batchSize", "priority"));
    }

    @ParameterizedTest
    @CsvSource({"1, 2", "30, 60", "50, 100", "70, 100", "100, 100"})
    void defaultLimitIsTwiceTheRequestCappedAtAWholeGpu(int request, int limit) {
        assertThat(Quota.defaultLimit(request)).isEqualTo(limit);
    }

    @Test
    void prioritiesParseFromTheirLabels() {
        assertThat(Priority.fromLabel("slo")).contains(Priority.SLO);
        assertThat(Priority.fromLabel("best-effort")).contains(Priority.BEST_EFFORT);
        assertThat(Priority.fromLabel("urgent")).isEmpty();
    }
}
