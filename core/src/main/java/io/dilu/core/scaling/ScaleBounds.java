package io.dilu.core.scaling;

import static io.dilu.core.contract.KnativeNames.INITIAL_SCALE;
import static io.dilu.core.contract.KnativeNames.MAX_SCALE;
import static io.dilu.core.contract.KnativeNames.MIN_SCALE;

import io.dilu.core.quota.FieldError;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Knative's scale bounds of a revision, from the PodAutoscaler's annotations: {@code min-scale} (default 0),
 * {@code max-scale} (0 = unbounded), {@code initial-scale} (default 1; 0 only with scale to zero).
 */
public record ScaleBounds(int min, int max, int initial) {

    static final int UNBOUNDED = 1000;

    /** The bounds; a malformed annotation is reported and read as its default, so scaling goes on. */
    public static ScaleBounds of(Map<String, String> annotations, List<FieldError> problems) {
        return of(annotations, KnativeAutoscalerConfig.DEFAULTS, problems);
    }

    /**
     * The bounds, where an annotation that is absent or malformed (reported) takes the cluster-wide default of
     * {@code config-autoscaler}.
     */
    public static ScaleBounds of(Map<String, String> annotations, KnativeAutoscalerConfig cluster, List<FieldError> problems) {
        int min = read(annotations, MIN_SCALE, Math.min(cluster.minScale(), UNBOUNDED), problems);
        int max = read(annotations, MAX_SCALE, Math.min(cluster.maxScale(), UNBOUNDED), problems);
        int initial = read(annotations, INITIAL_SCALE, Math.min(cluster.initialScale(), UNBOUNDED), problems);
        int upper = max == 0 ? UNBOUNDED : max;
        if (min > upper) {
            problems.add(new FieldError(MIN_SCALE, Integer.toString(min), "at most max-scale (" + upper + ")"));
            min = upper;
        }
        return new ScaleBounds(min, upper, Math.clamp(initial, min, upper));
    }

    private static int read(Map<String, String> annotations, String key, int fallback, List<FieldError> problems) {
        String v = annotations.get(key);
        if (v == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(v.strip());
            if (n >= 0 && n <= UNBOUNDED) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        problems.add(new FieldError(key, v, "an integer in 0.." + UNBOUNDED));
        return fallback;
    }

    /** Knative's defaults: min-scale 0, no max-scale, initial-scale 1. */
    public static final ScaleBounds DEFAULTS = of(Map.of(), new ArrayList<>());

    static ScaleBounds of(Map<String, String> annotations) {
        return of(annotations, new ArrayList<>());
    }
}
