package io.dilu.core.scaling;

import static io.dilu.core.contract.KnativeNames.SCALE_DOWN_DELAY;
import static io.dilu.core.contract.KnativeNames.SCALE_TO_ZERO_POD_RETENTION;
import static io.dilu.core.contract.KnativeNames.WINDOW;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Knative's per-revision timing knobs, from the PodAutoscaler's annotations, as this autoscaler reads them:
 * {@code window} is the lazy window (6s..1h, Knative's range; whole seconds, one sample each),
 * {@code scale-down-delay} how long a lower scale must be wanted before it is applied (0..1h), and
 * {@code scale-to-zero-pod-retention-period} the least time the last instance stays once zero is wanted. A
 * malformed one is reported naming the field and the allowed range, and read as absent (the cluster-wide default
 * of {@code config-autoscaler} then applies).
 */
public record ScalingAnnotations(OptionalInt windowSeconds, Optional<Duration> scaleDownDelay, Optional<Duration> retention) {

    static final Duration MIN_WINDOW = Duration.ofSeconds(6);
    static final Duration HOUR = Duration.ofHours(1);

    public static ScalingAnnotations of(Map<String, String> annotations, List<FieldError> problems) {
        Duration window = read(annotations, WINDOW, MIN_WINDOW, HOUR, "a duration in 6s..1h, e.g. 60s", problems);
        return new ScalingAnnotations(window == null ? OptionalInt.empty() : OptionalInt.of((int) window.toSeconds()),
                Optional.ofNullable(read(annotations, SCALE_DOWN_DELAY, Duration.ZERO, HOUR, "a duration in 0s..1h, e.g. 5m", problems)),
                Optional.ofNullable(read(annotations, SCALE_TO_ZERO_POD_RETENTION, Duration.ZERO, HOUR, "a duration in 0s..1h, e.g. 1m", problems)));
    }

    private static Duration read(Map<String, String> annotations, String key, Duration min, Duration max, String allowed,
            List<FieldError> problems) {
        String v = annotations.get(key);
        return v == null ? null : GoDuration.within(key, v, min, max, false, allowed, problems).orElse(null);
    }
}
