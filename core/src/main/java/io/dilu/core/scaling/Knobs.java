package io.dilu.core.scaling;

import static io.dilu.core.contract.KnativeNames.METRIC;
import static io.dilu.core.contract.KnativeNames.PANIC_THRESHOLD;
import static io.dilu.core.contract.KnativeNames.PANIC_WINDOW;
import static io.dilu.core.contract.KnativeNames.TARGET;
import static io.dilu.core.contract.KnativeNames.TARGET_BURST_CAPACITY;
import static io.dilu.core.contract.KnativeNames.TARGET_UTILIZATION;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One revision's scaling settings for this tick: its PodAutoscaler's annotations over the cluster's {@code
 * config-autoscaler} defaults, as Knative resolves them. A malformed annotation is reported naming the field and
 * the allowed range and read as absent. A pure function of its inputs.
 *
 * @param bounds min-, max- and initial-scale
 * @param scaleDownDelay how long a lower scale must be wanted before it is applied
 * @param grace how long zero must be wanted before the last pod goes (the longer of the grace period and the
 *     revision's pod retention period)
 * @param scaleToZero whether this revision may reach zero at all
 * @param burstCapacity the target burst capacity, for the number of activators
 * @param totalPerPod the most of the metric one pod carries, for the number of activators
 * @param policy the class's own settings
 */
public record Knobs(ScaleBounds bounds, Duration scaleDownDelay, Duration grace, boolean scaleToZero, double burstCapacity,
        double totalPerPod, Policy policy) {

    /** Knative's smallest target ({@code autoscaling.knative.dev/target} must be at least 0.01). */
    public static final double MIN_TARGET = 0.01;

    /** The class's settings. */
    public sealed interface Policy permits Lazy, Kpa {}

    /**
     * Dilu's lazy scaling: its window, in one-second samples, what one instance serves at its SM request
     * ({@code servingRate.rps()}) and, when known, at its SM limit ({@code servingRate.rpsAtLimit()}, NaN otherwise),
     * and whether instances its history expects back are parked rather than removed ({@link RevisionScaler}).
     */
    public record Lazy(int windowSeconds, InstanceRate servingRate, boolean parking) implements Policy {}

    /** Knative's KPA: its parameters and which metric they are about. */
    public record Kpa(KnativePodAutoscaler.Parameters parameters, boolean rps) implements Policy {}

    /**
     * Dilu's class.
     *
     * @param defaultWindowSeconds the lazy window when neither the annotation nor the ConfigMap sets one
     * @param servingRate what one instance serves
     * @param scaleToZero whether this installation lets revisions reach zero
     * @param parking whether this installation parks instances instead of removing them
     */
    public static Knobs lazy(Map<String, String> annotations, KnativeAutoscalerConfig cluster, int defaultWindowSeconds,
            InstanceRate servingRate, boolean scaleToZero, boolean parking, List<FieldError> problems) {
        ScalingAnnotations timing = ScalingAnnotations.of(annotations, problems);
        int window = timing.windowSeconds().orElse(cluster.stableWindow().map(d -> (int) d.toSeconds()).orElse(defaultWindowSeconds));
        return common(annotations, cluster, ScaleBounds.of(annotations, cluster, problems), timing, scaleToZero,
                servingRate.rps(), new Lazy(window, servingRate, parking), problems);
    }

    /**
     * Knative's class, with Knative's resolution of the target (its ResolveMetricTarget): the annotation's target,
     * else the revision's containerConcurrency, else the ConfigMap's default for the metric; for concurrency
     * never above containerConcurrency; times the target utilization.
     *
     * @param containerConcurrency the revision's hard limit, 0 for none
     */
    public static Knobs kpa(Map<String, String> annotations, long containerConcurrency, KnativeAutoscalerConfig cluster,
            boolean scaleToZero, List<FieldError> problems) {
        ScalingAnnotations timing = ScalingAnnotations.of(annotations, problems);
        String metric = annotations.getOrDefault(METRIC, "concurrency").strip().toLowerCase(Locale.ROOT);
        if (!metric.equals("rps") && !metric.equals("concurrency")) {
            problems.add(new FieldError(METRIC, annotations.get(METRIC), "concurrency or rps"));
            metric = "concurrency";
        }
        boolean rps = metric.equals("rps");
        double total = rps ? cluster.rpsTargetDefault()
                : containerConcurrency > 0 ? containerConcurrency : cluster.containerConcurrencyTargetDefault();
        Optional<Double> target = number(annotations, TARGET, MIN_TARGET, 1e9, "a number >= 0.01", problems);
        if (target.isPresent()) {
            total = !rps && containerConcurrency > 0 ? Math.min(target.get(), containerConcurrency) : target.get();
        }
        double utilization = number(annotations, TARGET_UTILIZATION, 1, 100, "a number in 1..100", problems)
                .map(v -> v / 100).orElse(cluster.containerConcurrencyTargetFraction());
        // Knative keeps target × utilization at least its smallest target, 0.01.
        utilization = Math.max(utilization, MIN_TARGET / total);
        Duration window = timing.windowSeconds().isPresent() ? Duration.ofSeconds(timing.windowSeconds().getAsInt())
                : cluster.kpaStableWindow();
        double panicWindow = number(annotations, PANIC_WINDOW, 1, 100, "a percentage in 1..100", problems)
                .orElse(cluster.panicWindowPercentage());
        double panicThreshold = number(annotations, PANIC_THRESHOLD, 110, 1000, "a percentage in 110..1000", problems)
                .orElse(cluster.panicThresholdPercentage());
        ScaleBounds bounds = ScaleBounds.of(annotations, cluster, problems);
        KnativePodAutoscaler.Parameters p = new KnativePodAutoscaler.Parameters(total, Math.min(1, utilization), window,
                panicWindow, panicThreshold, cluster.maxScaleUpRate(), cluster.maxScaleDownRate(), grace(timing, cluster),
                scaleToZero ? bounds.min() : Math.max(1, bounds.min()), Math.max(1, bounds.max()));
        return common(annotations, cluster, bounds, timing, scaleToZero, total, new Kpa(p, rps), problems);
    }

    private static Knobs common(Map<String, String> annotations, KnativeAutoscalerConfig cluster, ScaleBounds bounds,
            ScalingAnnotations timing, boolean scaleToZero, double totalPerPod, Policy policy, List<FieldError> problems) {
        String tbc = annotations.get(TARGET_BURST_CAPACITY);
        double burst = tbc == null ? cluster.targetBurstCapacity()
                : KnativeAutoscalerConfig.burstCapacity(TARGET_BURST_CAPACITY, tbc, problems).orElse(cluster.targetBurstCapacity());
        return new Knobs(bounds, timing.scaleDownDelay().orElse(cluster.scaleDownDelay()), grace(timing, cluster), scaleToZero, burst,
                totalPerPod, policy);
    }

    /** Knative's retention period is the least time the last pod stays once zero is wanted: the longer of it and the grace. */
    private static Duration grace(ScalingAnnotations timing, KnativeAutoscalerConfig cluster) {
        Duration retention = timing.retention().orElse(cluster.scaleToZeroPodRetentionPeriod());
        return retention.compareTo(cluster.scaleToZeroGracePeriod()) > 0 ? retention : cluster.scaleToZeroGracePeriod();
    }

    /** An annotation's number within [min, max]; a malformed one is reported naming the key and {@code allowed}. */
    public static Optional<Double> number(Map<String, String> annotations, String key, double min, double max,
            String allowed, List<FieldError> problems) {
        String value = annotations.get(key);
        if (value == null) {
            return Optional.empty();
        }
        try {
            double v = Double.parseDouble(value.strip());
            if (v >= min && v <= max) {
                return Optional.of(v);
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        problems.add(new FieldError(key, value, allowed));
        return Optional.empty();
    }
}
