package io.dilu.kube.profile;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.ConditionBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GpuFunctionProfileTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static GpuFunctionProfile profiled(long generation, long observed, String ready) {
        return profiled(generation, observed, ready, 200.0);
    }

    private static GpuFunctionProfile profiled(long generation, long observed, String ready, Double rpsAtLimit) {
        return new GpuFunctionProfile(new ObjectMetaBuilder().withName("bert").withNamespace("fns").withGeneration(generation).build(),
                ProfileSpec.toProfile("bert", "inference", "emu:1", List.of("emu-infer"), 200, null),
                new ProfileStatus(observed, List.of(new ConditionBuilder().withType(GpuFunctionProfile.READY).withStatus(ready).build()),
                        30, 60, 4, 2048L, 120.0, rpsAtLimit, 7, List.of()));
    }

    private static GpuFunctionProfile handWritten(String rates) throws Exception {
        return JSON.readValue("""
                {"apiVersion":"dilu.io/v1alpha1","kind":"GpuFunctionProfile","metadata":{"name":"bert","namespace":"fns"},
                 "spec":{"function":"bert","smRequest":25,"memoryMiB":6144,%s}}""".formatted(rates), GpuFunctionProfile.class);
    }

    @Test
    void aHandWrittenSpecGivesItsOwnSettings() throws Exception {
        GpuFunctionProfile p = JSON.readValue("""
                {"apiVersion":"dilu.io/v1alpha1","kind":"GpuFunctionProfile","metadata":{"name":"bert","namespace":"fns"},
                 "spec":{"function":"bert","type":"llm-inference","smRequest":25,"smLimit":45,"memoryMiB":6144,"batchSize":8,
                         "priority":"slo","klcThreshold":1.25,"servingThroughputRps":40.5,"unknownField":1}}""", GpuFunctionProfile.class);
        assertThat(p.settings()).contains(new ProfileSettings("bert", 25, java.util.Optional.of(45), 6144, java.util.Optional.of(8),
                java.util.Optional.of("slo"), true, java.util.Optional.of(1.25), java.util.Optional.of(40.5)));
    }

    @Test
    void aProfiledOneGivesItsStatusOnlyWhenReadyForTheCurrentSpec() {
        ProfileSettings s = profiled(2, 2, "True").settings().orElseThrow();
        assertThat(s.smRequest()).isEqualTo(30);
        assertThat(s.smLimit()).contains(60);
        assertThat(s.batchSize()).contains(4);
        assertThat(s.memoryMiB()).isEqualTo(2048);
        assertThat(s.priority()).contains("slo");
        assertThat(s.servingThroughputRps()).contains(120.0);
        assertThat(s.servingThroughputRpsAtLimit()).contains(200.0);
        assertThat(profiled(3, 2, "True").settings()).as("the spec changed since").isEmpty();
        assertThat(profiled(2, 2, "False").settings()).as("not ready").isEmpty();
        assertThat(new GpuFunctionProfile(new ObjectMetaBuilder().withName("x").build(),
                ProfileSpec.toProfile("x", "training", "emu:1", null, null, null), null).settings()).as("no status yet").isEmpty();
    }

    @Test
    void theRateAtTheLimitIsReadFromTheSpecOrTheStatusAndAbsentIsUnknown() throws Exception {
        List<FieldError> problems = new ArrayList<>();
        assertThat(handWritten("\"servingThroughputRps\":40,\"servingThroughputRpsAtLimit\":64.5").settings(problems).orElseThrow()
                .servingThroughputRpsAtLimit()).contains(64.5);
        assertThat(handWritten("\"servingThroughputRpsAtLimit\":64.5").settings(problems).orElseThrow()
                .servingThroughputRpsAtLimit()).as("no rate at the request to be below").contains(64.5);
        assertThat(handWritten("\"servingThroughputRps\":40").settings(problems).orElseThrow().servingThroughputRpsAtLimit()).isEmpty();
        assertThat(profiled(2, 2, "True", null).settings(problems).orElseThrow().servingThroughputRpsAtLimit()).isEmpty();
        assertThat(problems).isEmpty();
    }

    @Test
    void aHostileRateAtTheLimitIsRefusedNamingTheFieldAndRangeAndReadsAsUnknown() throws Exception {
        List<FieldError> problems = new ArrayList<>();
        for (double bad : new double[] {-1, Double.NaN, Double.POSITIVE_INFINITY, 2e7, 119.9}) {
            ProfileSettings s = profiled(2, 2, "True", bad).settings(problems).orElseThrow();
            assertThat(s.servingThroughputRpsAtLimit()).as("%s", bad).isEmpty();
            assertThat(s.smRequest()).as("the other settings stand").isEqualTo(30);
        }
        String range = " is not allowed: must be a number in 120..1e7, at least status.servingThroughputRps (a larger share "
                + "does not serve less)";
        assertThat(problems).extracting(FieldError::message).containsExactly(
                "status.servingThroughputRpsAtLimit=-1.0" + range, "status.servingThroughputRpsAtLimit=NaN" + range,
                "status.servingThroughputRpsAtLimit=Infinity" + range, "status.servingThroughputRpsAtLimit=2.0E7" + range,
                "status.servingThroughputRpsAtLimit=119.9" + range);
        problems.clear();
        assertThat(handWritten("\"servingThroughputRps\":40.25,\"servingThroughputRpsAtLimit\":12").settings(problems)
                .orElseThrow().servingThroughputRpsAtLimit()).isEmpty();
        assertThat(handWritten("\"servingThroughputRpsAtLimit\":-3").settings(problems).orElseThrow()
                .servingThroughputRpsAtLimit()).isEmpty();
        assertThat(problems).extracting(FieldError::message).containsExactly(
                "spec.servingThroughputRpsAtLimit=12.0 is not allowed: must be a number in 40.25..1e7, at least "
                        + "spec.servingThroughputRps (a larger share does not serve less)",
                "spec.servingThroughputRpsAtLimit=-3.0 is not allowed: must be a number in 0..1e7");
        assertThat(profiled(2, 2, "True", -1.0).settings()).as("settings() reads it as unknown too")
                .hasValueSatisfying(s -> assertThat(s.servingThroughputRpsAtLimit()).isEmpty());
    }

    @Test
    void itWritesTheApiServersShape() throws Exception {
        @SuppressWarnings("unchecked")
        Map<String, Object> json = JSON.convertValue(profiled(1, 1, "True"), Map.class);
        assertThat(json.get("apiVersion")).isEqualTo("dilu.io/v1alpha1");
        assertThat(json.get("kind")).isEqualTo("GpuFunctionProfile");
        assertThat(JSON.convertValue(json.get("spec"), Map.class).keySet()).containsExactlyInAnyOrder("function", "type", "sloMillis", "image", "command");
        assertThat(JSON.convertValue(json.get("status"), Map.class)).containsEntry("smRequest", 30).containsEntry("searchTrials", 7)
                .containsEntry("servingThroughputRpsAtLimit", 200.0);
    }
}
