package io.dilu.autoscaler.decide;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.kube.profile.ProfileSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ServingRateTest {

    /** A cluster whose config-autoscaler is Knative's default: 70% target utilization. */
    static final KnativeAutoscalerConfig KNATIVE = KnativeAutoscalerConfig.DEFAULTS;

    /** Batch 4 at 120 rps: one request takes about 33 ms. */
    static Optional<ProfileSettings> bert(String key) {
        return key.equals("bert") ? Optional.of(new ProfileSettings("bert", 20, Optional.of(40), 2048, Optional.of(4),
                Optional.of("slo"), false, Optional.empty(), Optional.of(120.0))) : Optional.empty();
    }

    /** Batch 4 at 120 rps at SM 20, 192 rps at its limit, SM 40. */
    static Optional<ProfileSettings> measured(String key) {
        return key.equals("bert") ? Optional.of(new ProfileSettings("bert", 20, Optional.of(40), 2048, Optional.of(4),
                Optional.of("slo"), false, Optional.empty(), Optional.of(120.0), Optional.of(192.0))) : Optional.empty();
    }

    static Optional<ProfileSettings> none(String key) {
        return Optional.empty();
    }

    static InstanceRate rate(Map<String, String> annotations, List<FieldError> problems) {
        return ServingRate.of(annotations, Map.of(), KNATIVE, ServingRateTest::bert, ServingRateTest::none, 10, problems);
    }

    @Test
    void theAnnotationThenTheNamedProfileThenTheFunctionsProfileThenTheDefault() {
        List<FieldError> problems = new ArrayList<>();
        assertThat(rate(Map.of(DiluNames.SERVING_RPS, "40", "dilu.io/profile", "bert"), problems).rps()).isEqualTo(40);
        assertThat(rate(Map.of("dilu.io/profile", "bert"), problems)).isEqualTo(new InstanceRate(120, "GpuFunctionProfile of bert"));
        assertThat(ServingRate.of(Map.of(), Map.of(KnativeNames.SERVICE_LABEL, "bert"), KNATIVE, ServingRateTest::none,
                ServingRateTest::bert, 10, problems).rps()).isEqualTo(120);
        assertThat(problems).isEmpty();
        assertThat(rate(Map.of(DiluNames.SERVING_RPS, "-3"), problems)).as("a bad annotation is skipped")
                .isEqualTo(new InstanceRate(10, "default"));
        assertThat(problems).extracting(FieldError::message)
                .containsExactly("dilu.io/serving-rps=-3 is not allowed: must be a number > 0");
    }

    @Test
    void theRateAtTheLimitCanBeAnnotatedBesideTheRate() {
        List<FieldError> problems = new ArrayList<>();
        assertThat(rate(Map.of(DiluNames.SERVING_RPS, "40", DiluNames.SERVING_RPS_AT_LIMIT, "64"), problems))
                .isEqualTo(new InstanceRate(40, DiluNames.SERVING_RPS, 64));
        assertThat(problems).isEmpty();
        assertThat(rate(Map.of(DiluNames.SERVING_RPS, "40", DiluNames.SERVING_RPS_AT_LIMIT, "30"), problems).rpsAtLimit())
                .as("below the rate at the request: refused, unknown").isNaN();
        assertThat(problems).extracting(FieldError::message).containsExactly(
                "dilu.io/serving-rps-at-limit=30 is not allowed: must be a number >= dilu.io/serving-rps (40.0)");
    }

    @Test
    void theProfilesRateAtTheLimitIsReadBesideItsRateAtTheRequest() {
        List<FieldError> problems = new ArrayList<>();
        InstanceRate r = ServingRate.of(Map.of("dilu.io/profile", "bert"), Map.of(), KNATIVE, ServingRateTest::measured,
                ServingRateTest::none, 10, problems);
        assertThat(r).isEqualTo(new InstanceRate(120, "GpuFunctionProfile of bert", 192));
        assertThat(ServingRate.of(Map.of(), Map.of(KnativeNames.SERVICE_LABEL, "bert"), KNATIVE, ServingRateTest::none,
                ServingRateTest::measured, 10, problems).rpsAtLimit()).as("the function's profile").isEqualTo(192);
        // A rate chosen by annotation keeps the headroom the profile measured: 192 / 120 = 1.6 times it.
        assertThat(ServingRate.of(Map.of(DiluNames.SERVING_RPS, "50", "dilu.io/profile", "bert"), Map.of(), KNATIVE,
                ServingRateTest::measured, ServingRateTest::none, 10, problems).rpsAtLimit()).isCloseTo(80, offset(1e-9));
        assertThat(ServingRate.of(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50", KnativeNames.TARGET_UTILIZATION,
                "100", "dilu.io/profile", "bert"), Map.of(), KNATIVE, ServingRateTest::measured, ServingRateTest::none, 10, problems)
                .rpsAtLimit()).isCloseTo(80, offset(1e-9));
        assertThat(problems).isEmpty();
    }

    @Test
    void theRateAtTheLimitIsNanWhenUnknown() {
        List<FieldError> problems = new ArrayList<>();
        assertThat(rate(Map.of("dilu.io/profile", "bert"), problems).rpsAtLimit()).as("a profile without it").isNaN();
        assertThat(rate(Map.of(), problems).rpsAtLimit()).as("no profile: the default").isNaN();
        assertThat(rate(Map.of(DiluNames.SERVING_RPS, "40"), problems).rpsAtLimit()).as("an annotation, no profile").isNaN();
        assertThat(ServingRate.of(Map.of(), Map.of(), KNATIVE, ServingRateTest::measured, ServingRateTest::measured, 10, problems)
                .rpsAtLimit()).as("no profile named").isNaN();
    }

    @Test
    void knativesTargetForRpsIsTakenAtItsUtilization() {
        List<FieldError> problems = new ArrayList<>();
        assertThat(rate(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50"), problems).rps())
                .as("70%% by default, as Knative").isEqualTo(35.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(rate(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50", KnativeNames.TARGET_UTILIZATION, "100",
                "dilu.io/profile", "bert"), problems).rps()).as("over the profile").isEqualTo(50);
        KnativeAutoscalerConfig eighty = KnativeAutoscalerConfig.parse(
                Map.of("container-concurrency-target-percentage", "80"), problems);
        assertThat(ServingRate.of(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50"), Map.of(), eighty, ServingRateTest::none,
                ServingRateTest::none, 10, problems).rps()).as("the cluster's config-autoscaler, unless annotated")
                .isEqualTo(40.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(ServingRate.of(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50", KnativeNames.TARGET_UTILIZATION, "60"), Map.of(),
                eighty, ServingRateTest::none, ServingRateTest::none, 10, problems).rps()).as("the annotation over it")
                .isEqualTo(30.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(rate(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "50", DiluNames.SERVING_RPS, "12"), problems).rps())
                .as("dilu.io/serving-rps overrides").isEqualTo(12);
        assertThat(problems).isEmpty();
    }

    @Test
    void aConcurrencyTargetBecomesARateThroughTheProfilesLatency() {
        List<FieldError> problems = new ArrayList<>();
        // 4 requests in flight at 100%, each 4/120 s: 120 rps; 2 in flight: 60.
        assertThat(rate(Map.of(KnativeNames.METRIC, "concurrency", KnativeNames.TARGET, "2", KnativeNames.TARGET_UTILIZATION, "100",
                "dilu.io/profile", "bert"), problems).rps()).isEqualTo(60.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(rate(Map.of(KnativeNames.TARGET, "2", KnativeNames.TARGET_UTILIZATION, "100"), problems))
                .as("concurrency is Knative's default metric; without a profile there is no latency to go through")
                .isEqualTo(new InstanceRate(10, "default"));
        assertThat(problems).isEmpty();
    }

    @Test
    void badKnativeAnnotationsAreReportedNamingTheFieldAndSkipped() {
        List<FieldError> problems = new ArrayList<>();
        assertThat(rate(Map.of(KnativeNames.METRIC, "cpu", KnativeNames.TARGET, "50", "dilu.io/profile", "bert"), problems).rps())
                .isEqualTo(120);
        assertThat(rate(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, "0", KnativeNames.TARGET_UTILIZATION, "150"), problems)
                .rps()).isEqualTo(10);
        assertThat(problems).extracting(FieldError::message).containsExactly(
                "autoscaling.knative.dev/metric=cpu is not allowed: must be rps or concurrency for this class",
                "autoscaling.knative.dev/target=0 is not allowed: must be a number >= 0.01",
                "autoscaling.knative.dev/target-utilization-percentage=150 is not allowed: must be a number in 1..100");
    }
}
