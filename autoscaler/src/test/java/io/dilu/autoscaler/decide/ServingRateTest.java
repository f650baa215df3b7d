package io.dilu.autoscaler.decide;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

class ServingRateTest {

    static OptionalDouble bert(String key) {
        return key.equals("bert") ? OptionalDouble.of(120) : OptionalDouble.empty();
    }

    @Test
    void theAnnotationThenTheNamedProfileThenTheFunctionsProfileThenTheDefault() {
        assertThat(ServingRate.of(Map.of(ServingRate.ANNOTATION, "40", "dilu.io/profile", "bert"), Map.of(),
                ServingRateTest::bert, ServingRateTest::bert, 10).rps()).isEqualTo(40);
        assertThat(ServingRate.of(Map.of("dilu.io/profile", "bert"), Map.of(), ServingRateTest::bert, k -> OptionalDouble.empty(), 10))
                .isEqualTo(new ServingRate.Rate(120, "GpuFunctionProfile bert"));
        assertThat(ServingRate.of(Map.of(), Map.of("serving.knative.dev/service", "bert"), k -> OptionalDouble.empty(),
                ServingRateTest::bert, 10).rps()).isEqualTo(120);
        assertThat(ServingRate.of(Map.of(ServingRate.ANNOTATION, "-3"), Map.of(), ServingRateTest::bert, ServingRateTest::bert, 10))
                .as("a bad annotation is ignored").isEqualTo(new ServingRate.Rate(10, "default"));
    }
}
