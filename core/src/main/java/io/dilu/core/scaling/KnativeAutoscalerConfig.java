package io.dilu.core.scaling;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Knative's cluster-wide autoscaling defaults, the {@code config-autoscaler} ConfigMap of {@code knative-serving},
 * as this autoscaler reads them. Keys, defaults and ranges follow Knative Serving's own parser
 * (pkg/autoscaler/config/config.go): an absent key has Knative's default; a malformed or out-of-range one is
 * reported naming the key and the allowed range and keeps its default, so one bad key changes nothing else.
 * {@code stableWindow} is empty unless the ConfigMap sets it: Dilu's class then keeps its own lazy window (the
 * paper's 40 s), which Knative's 60 s default was not chosen for.
 */
public record KnativeAutoscalerConfig(boolean enableScaleToZero, double containerConcurrencyTargetFraction,
        double containerConcurrencyTargetDefault, double rpsTargetDefault, double maxScaleUpRate, double maxScaleDownRate,
        double targetBurstCapacity, double panicWindowPercentage, double activatorCapacity, double panicThresholdPercentage,
        Optional<Duration> stableWindow, Duration scaleToZeroGracePeriod, Duration scaleToZeroPodRetentionPeriod,
        Duration scaleDownDelay, boolean allowZeroInitialScale, int initialScale, int minScale, int maxScale) {

    /** Knative's stable window when none is set. */
    public static final Duration DEFAULT_STABLE_WINDOW = Duration.ofSeconds(60);
    /** Knative's fewest activators kept in a revision's path. */
    public static final int MIN_ACTIVATORS = 2;

    /** Knative's defaults: what a cluster without the ConfigMap, or with an empty one, runs with. */
    public static final KnativeAutoscalerConfig DEFAULTS = new KnativeAutoscalerConfig(true, 0.7, 100, 200, 1000, 2, 211, 10,
            100, 200, Optional.empty(), Duration.ofSeconds(30), Duration.ZERO, Duration.ZERO, false, 1, 0, 0);

    /** The stable window to use for Knative's own class. */
    public Duration kpaStableWindow() {
        return stableWindow.orElse(DEFAULT_STABLE_WINDOW);
    }

    /**
     * Parses the ConfigMap's data.
     *
     * @param problems where keys that are malformed or out of range are reported (each keeps its default)
     */
    public static KnativeAutoscalerConfig parse(Map<String, String> data, List<FieldError> problems) {
        Reader r = new Reader(data == null ? Map.of() : data, problems);
        KnativeAutoscalerConfig d = DEFAULTS;
        double fraction = r.number("container-concurrency-target-percentage", d.containerConcurrencyTargetFraction() * 100,
                1, 100, "a percentage in 1..100");
        Optional<Duration> window = r.present("stable-window")
                ? Optional.ofNullable(r.duration("stable-window", null, Duration.ofSeconds(6), Duration.ofHours(1), true,
                        "a duration in 6s..1h, whole seconds"))
                : Optional.empty();
        boolean allowZeroInitial = r.bool("allow-zero-initial-scale", d.allowZeroInitialScale());
        int maxScale = (int) r.number("max-scale", d.maxScale(), 0, Integer.MAX_VALUE, "an integer >= 0 (0: no limit)");
        int minScale = (int) r.number("min-scale", d.minScale(), 0, maxScale == 0 ? Integer.MAX_VALUE : maxScale,
                "an integer in 0..max-scale");
        return new KnativeAutoscalerConfig(
                r.bool("enable-scale-to-zero", d.enableScaleToZero()),
                fraction / 100,
                r.number("container-concurrency-target-default", d.containerConcurrencyTargetDefault(), 0.01, 1e9, "a number >= 0.01"),
                r.number("requests-per-second-target-default", d.rpsTargetDefault(), 0.01, 1e9, "a number >= 0.01"),
                r.number("max-scale-up-rate", d.maxScaleUpRate(), Math.nextUp(1.0), 1e9, "a number > 1"),
                r.number("max-scale-down-rate", d.maxScaleDownRate(), Math.nextUp(1.0), 1e9, "a number > 1"),
                r.burstCapacity(d.targetBurstCapacity()),
                r.number("panic-window-percentage", d.panicWindowPercentage(), 1, 100, "a percentage in 1..100"),
                r.number("activator-capacity", d.activatorCapacity(), 1, 1e9, "a number >= 1"),
                r.number("panic-threshold-percentage", d.panicThresholdPercentage(), 110, 1000, "a percentage in 110..1000"),
                window,
                r.duration("scale-to-zero-grace-period", d.scaleToZeroGracePeriod(), Duration.ofSeconds(1), Duration.ofHours(1),
                        false, "a duration in 1s..1h"),
                r.duration("scale-to-zero-pod-retention-period", d.scaleToZeroPodRetentionPeriod(), Duration.ZERO,
                        Duration.ofHours(1), false, "a duration in 0s..1h"),
                r.duration("scale-down-delay", d.scaleDownDelay(), Duration.ZERO, Duration.ofHours(1), true,
                        "a duration in 0s..1h, whole seconds"),
                allowZeroInitial,
                (int) r.number("initial-scale", d.initialScale(), allowZeroInitial ? 0 : 1, Integer.MAX_VALUE,
                        allowZeroInitial ? "an integer >= 0" : "an integer >= 1 (0 needs allow-zero-initial-scale)"),
                minScale, maxScale);
    }

    /**
     * Knative's rule for how many activators a revision's ServerlessService asks for: enough to carry the
     * ready pods' capacity plus the burst capacity at {@code activator-capacity} each, and never fewer than two.
     *
     * @param readyPods ready pods of the revision
     * @param totalPerPod the most of the metric one pod may carry (Knative's "total value")
     * @param burstCapacity the revision's target burst capacity (-1: unlimited, 0: activator out of the path)
     */
    public int activators(int readyPods, double totalPerPod, double burstCapacity) {
        if (burstCapacity == 0) {
            return MIN_ACTIVATORS;
        }
        double cover = readyPods * totalPerPod + Math.max(0, burstCapacity);
        return (int) Math.max(MIN_ACTIVATORS, Math.min(Integer.MAX_VALUE, Math.ceil(cover / activatorCapacity)));
    }

    /**
     * A target burst capacity, the ConfigMap's or a revision's annotation: a number of 0 or more, or -1 for
     * unlimited; otherwise empty, reported naming {@code key}.
     */
    public static Optional<Double> burstCapacity(String key, String text, List<FieldError> problems) {
        try {
            double v = Double.parseDouble(text.strip());
            if (v == -1 || (v >= 0 && v <= 1e9)) {
                return Optional.of(v);
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        problems.add(new FieldError(key, text, "a number >= 0, or -1 (unlimited)"));
        return Optional.empty();
    }

    /** Reads keys, reporting what it cannot use. */
    private record Reader(Map<String, String> data, List<FieldError> problems) {

        boolean present(String key) {
            return data.get(key) != null && !data.get(key).isBlank();
        }

        boolean bool(String key, boolean fallback) {
            if (!present(key)) {
                return fallback;
            }
            String v = data.get(key).strip();
            if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) {
                return Boolean.parseBoolean(v);
            }
            problems.add(new FieldError(key, data.get(key), "true or false"));
            return fallback;
        }

        double number(String key, double fallback, double min, double max, String allowed) {
            if (!present(key)) {
                return fallback;
            }
            try {
                double v = Double.parseDouble(data.get(key).strip());
                if (v >= min && v <= max) {
                    return v;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            problems.add(new FieldError(key, data.get(key), allowed));
            return fallback;
        }

        double burstCapacity(double fallback) {
            String key = "target-burst-capacity";
            return present(key) ? KnativeAutoscalerConfig.burstCapacity(key, data.get(key), problems).orElse(fallback) : fallback;
        }

        Duration duration(String key, Duration fallback, Duration min, Duration max, boolean wholeSeconds, String allowed) {
            return present(key) ? GoDuration.within(key, data.get(key), min, max, wholeSeconds, allowed, problems).orElse(fallback)
                    : fallback;
        }
    }
}
