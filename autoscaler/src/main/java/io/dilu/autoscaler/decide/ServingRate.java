package io.dilu.autoscaler.decide;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.kube.profile.ProfileSettings;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Requests per second one instance of a function is to serve: the capacity lazy scaling compares the rate with.
 * In order: the revision's {@code dilu.io/serving-rps} (Dilu's override); Knative's own {@code
 * autoscaling.knative.dev/target} for {@code metric: rps}, times {@code target-utilization-percentage} (unless
 * given, the cluster's {@code config-autoscaler} {@code container-concurrency-target-percentage}, as Knative); the same for {@code metric: concurrency}, turned into a rate through the profile's latency
 * (Little's law: in-flight requests / latency of one); the {@code servingThroughputRps} of its GpuFunctionProfile
 * (named by {@code dilu.io/profile}, else the one for its {@code dilu.io/function} or Knative service); else a
 * configured default. A malformed annotation is reported and skipped, so scaling goes on.
 *
 * <p>Beside it, what one instance serves at its SM limit ({@link InstanceRate#rpsAtLimit}), when the profile measured it
 * ({@code servingThroughputRpsAtLimit}): how much of a burst vertical scaling can take before another instance is
 * needed: the burst guard's threshold ({@link io.dilu.core.scaling.RevisionScaler}).
 */
public final class ServingRate {


    private ServingRate() {}

    /**
     * What one instance serves at its SM request, and at its limit: {@link InstanceRate#rpsAtLimit} is the profile's
     * {@code servingThroughputRpsAtLimit} when {@code rps} is its {@code servingThroughputRps}; when {@code rps} came
     * from an annotation, {@code rps} times the profile's ratio of the two (the headroom it measured, applied to the
     * rate chosen), where the profile has both; NaN otherwise.
     *
     * @param cluster the cluster's {@code config-autoscaler}: the target utilization a revision does not set
     * @param byName a profile's settings by profile name
     * @param byFunction a profile's settings by the function it describes
     * @param problems where malformed annotations are reported, naming the field and the allowed range
     */
    public static InstanceRate of(Map<String, String> annotations, Map<String, String> labels, KnativeAutoscalerConfig cluster,
            Function<String, Optional<ProfileSettings>> byName, Function<String, Optional<ProfileSettings>> byFunction,
            double fallback, List<FieldError> problems) {
        Optional<Double> annotated = Knobs.number(annotations, DiluNames.SERVING_RPS, Double.MIN_VALUE, Double.MAX_VALUE,
                "a number > 0", problems);
        Optional<ProfileSettings> profile = Optional.ofNullable(annotations.get(DiluNames.PROFILE)).flatMap(byName);
        if (profile.isEmpty()) {
            String function = Optional.ofNullable(annotations.get(DiluNames.FUNCTION))
                    .orElse(labels.get(KnativeNames.SERVICE_LABEL));
            profile = function == null ? Optional.empty() : byFunction.apply(function);
        }
        double headroom = profile.map(ServingRate::headroom).orElse(Double.NaN);
        if (annotated.isPresent()) {
            // Dilu's own override at the limit too, when given (at least the rate at the request).
            Optional<Double> atLimit = Knobs.number(annotations, DiluNames.SERVING_RPS_AT_LIMIT, annotated.get(), Double.MAX_VALUE,
                    "a number >= " + DiluNames.SERVING_RPS + " (" + annotated.get() + ")", problems);
            return new InstanceRate(annotated.get(), DiluNames.SERVING_RPS, atLimit.orElse(annotated.get() * headroom));
        }
        Optional<InstanceRate> knative = knativeTarget(annotations, cluster, profile, problems);
        if (knative.isPresent()) {
            InstanceRate k = knative.get();
            return new InstanceRate(k.rps(), k.source(), k.rps() * headroom);
        }
        Optional<Double> profiled = profile.flatMap(ProfileSettings::servingThroughputRps).filter(v -> v > 0);
        if (profiled.isPresent()) {
            return new InstanceRate(profiled.get(), "GpuFunctionProfile of " + profile.get().function(),
                    profile.get().servingThroughputRpsAtLimit().orElse(Double.NaN));
        }
        return new InstanceRate(fallback, "default");
    }

    /** The profile's rate at the limit over its rate at the request (≥ 1, as settings() checks); NaN when either is unknown. */
    private static double headroom(ProfileSettings p) {
        double atRequest = p.servingThroughputRps().filter(v -> v > 0).orElse(Double.NaN);
        return p.servingThroughputRpsAtLimit().orElse(Double.NaN) / atRequest;
    }

    /** Knative's target and utilization as a per-instance rate; empty without a target (or one this class cannot read). */
    private static Optional<InstanceRate> knativeTarget(Map<String, String> annotations, KnativeAutoscalerConfig cluster,
            Optional<ProfileSettings> profile, List<FieldError> problems) {
        Optional<Double> target = Knobs.number(annotations, KnativeNames.TARGET, Knobs.MIN_TARGET, Double.MAX_VALUE, "a number >= 0.01", problems);
        Optional<Double> utilization = Knobs.number(annotations, KnativeNames.TARGET_UTILIZATION, 1, 100, "a number in 1..100", problems);
        if (target.isEmpty()) {
            return Optional.empty();
        }
        double share = utilization.map(percent -> percent / 100).orElse(cluster.containerConcurrencyTargetFraction());
        String metric = annotations.getOrDefault(KnativeNames.METRIC, "concurrency").strip().toLowerCase(Locale.ROOT);
        String basis = String.format(Locale.ROOT, "%s=%s at %s%%", KnativeNames.TARGET, annotations.get(KnativeNames.TARGET), fmt(share * 100));
        return switch (metric) {
            case "rps" -> Optional.of(new InstanceRate(target.get() * share, basis + " (rps)"));
            case "concurrency" -> profile.filter(p -> p.servingThroughputRps().orElse(0.0) > 0).map(p -> {
                // One request takes about one batch's latency, batch / throughput: in-flight / latency is a rate.
                double latencySeconds = p.batchSize().orElse(1) / p.servingThroughputRps().get();
                return new InstanceRate(target.get() * share / latencySeconds, basis + " (concurrency, through the profile's "
                        + fmt(latencySeconds * 1000) + " ms)");
            });
            default -> {
                problems.add(new FieldError(KnativeNames.METRIC, annotations.get(KnativeNames.METRIC), "rps or concurrency for this class"));
                yield Optional.empty();
            }
        };
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.4g", v).replaceAll("\\.?0+$", "");
    }
}
