package io.dilu.autoscaler.decide;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.Function;

/**
 * Requests per second one instance of a function serves at its SM request: the revision's
 * {@code dilu.io/serving-rps} annotation, else the {@code servingThroughputRps} of its GpuFunctionProfile
 * (named by {@code dilu.io/profile}, else the one for its {@code dilu.io/function} or Knative service), else a
 * configured default.
 */
public final class ServingRate {

    public static final String ANNOTATION = "dilu.io/serving-rps";
    static final String PROFILE = "dilu.io/profile";
    static final String FUNCTION = "dilu.io/function";
    static final String SERVICE_LABEL = "serving.knative.dev/service";

    private ServingRate() {}

    /** Where the rate came from, for logs and status. */
    public record Rate(double rps, String source) {}

    /**
     * @param byName a profile's rate by profile name
     * @param byFunction a profile's rate by the function it describes
     */
    public static Rate of(Map<String, String> annotations, Map<String, String> labels,
            Function<String, OptionalDouble> byName, Function<String, OptionalDouble> byFunction, double fallback) {
        OptionalDouble annotated = positive(annotations.get(ANNOTATION));
        if (annotated.isPresent()) {
            return new Rate(annotated.getAsDouble(), ANNOTATION);
        }
        Optional<String> profile = Optional.ofNullable(annotations.get(PROFILE));
        if (profile.isPresent() && byName.apply(profile.get()).isPresent()) {
            return new Rate(byName.apply(profile.get()).getAsDouble(), "GpuFunctionProfile " + profile.get());
        }
        String function = Optional.ofNullable(annotations.get(FUNCTION)).orElse(labels.get(SERVICE_LABEL));
        if (function != null && byFunction.apply(function).isPresent()) {
            return new Rate(byFunction.apply(function).getAsDouble(), "GpuFunctionProfile of " + function);
        }
        return new Rate(fallback, "default");
    }

    private static OptionalDouble positive(String value) {
        if (value == null) {
            return OptionalDouble.empty();
        }
        try {
            double v = Double.parseDouble(value.strip());
            return v > 0 && Double.isFinite(v) ? OptionalDouble.of(v) : OptionalDouble.empty();
        } catch (NumberFormatException e) {
            return OptionalDouble.empty();
        }
    }
}
