package io.dilu.core.contract;

import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.core.tokens.TokenParameters;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads the quota annotations of a pod ({@code dilu.io/sm-limit}, {@code dilu.io/priority},
 * {@code dilu.io/batch-size}, {@code dilu.io/klc-threshold}, {@code dilu.io/llm}) against the container's SM
 * request. The webhook refuses what
 * {@link #validate} names; components downstream of it read with {@link #smLimit} and {@link #priority},
 * which fall back to the defaults rather than fail, since a pod that is already running must keep its share.
 */
public final class PodQuotaAnnotations {

    private PodQuotaAnnotations() {}

    /** Every reason the annotations cannot stand beside an SM request of {@code smRequest}. */
    public static List<FieldError> validate(Map<String, String> annotations, int smRequest) {
        List<FieldError> errors = new ArrayList<>();
        String limit = annotations.get(DiluNames.SM_LIMIT);
        if (limit != null && parseLimit(limit, smRequest) < 0) {
            errors.add(new FieldError(DiluNames.SM_LIMIT, limit,
                    "an integer percent in " + Math.clamp(smRequest, Quota.MIN_SM, Quota.MAX_SM) + "..100 (request..100)"));
        }
        String priority = annotations.get(DiluNames.PRIORITY);
        if (priority != null && Priority.fromLabel(priority).isEmpty()) {
            errors.add(new FieldError(DiluNames.PRIORITY, priority, "one of slo, best-effort"));
        }
        String batch = annotations.get(DiluNames.BATCH_SIZE);
        if (batch != null && parsePositive(batch) < 1) {
            errors.add(new FieldError(DiluNames.BATCH_SIZE, batch, "an integer of at least 1"));
        }
        String threshold = annotations.get(DiluNames.KLC_THRESHOLD);
        if (threshold != null && Double.isNaN(klcThreshold(threshold))) {
            errors.add(new FieldError(DiluNames.KLC_THRESHOLD, threshold,
                    "a ratio in (1, " + (int) TokenParameters.MAX_KLC_THRESHOLD + "], e.g. 1.6"));
        }
        String llm = annotations.get(DiluNames.LLM);
        if (llm != null && !llm.equals("true") && !llm.equals("false")) {
            errors.add(new FieldError(DiluNames.LLM, llm, "true or false"));
        }
        String split = annotations.get(DiluNames.SPLIT);
        if (split != null && !split.equals(DiluNames.SPLIT_PIPELINE)) {
            errors.add(new FieldError(DiluNames.SPLIT, split, DiluNames.SPLIT_PIPELINE));
        }
        String assigned = annotations.get(DiluNames.ASSIGNED_GPUS);
        if (assigned != null) {
            AssignedGpus.validate(assigned).ifPresent(errors::add);
        }
        return errors;
    }

    /** The SM limit in percent: the annotation when valid, else min(100, 2 × request). */
    public static int smLimit(Map<String, String> annotations, int smRequest) {
        String limit = annotations.get(DiluNames.SM_LIMIT);
        int parsed = limit == null ? -1 : parseLimit(limit, smRequest);
        return parsed >= 0 ? parsed : Quota.defaultLimit(smRequest);
    }

    /** The priority: the annotation when valid, else {@code fallback}. */
    public static Priority priority(Map<String, String> annotations, Priority fallback) {
        String label = annotations.get(DiluNames.PRIORITY);
        return label == null ? fallback : Priority.fromLabel(label).orElse(fallback);
    }

    /**
     * The KLC threshold of an SLO instance: the annotation when valid, else {@link TokenParameters#LLM_KLC_THRESHOLD}
     * for an LLM function, else {@code NaN}, which leaves it to the node's default.
     */
    public static double klcThreshold(Map<String, String> annotations) {
        String value = annotations.get(DiluNames.KLC_THRESHOLD);
        double parsed = value == null ? Double.NaN : klcThreshold(value);
        if (!Double.isNaN(parsed)) {
            return parsed;
        }
        return "true".equals(annotations.get(DiluNames.LLM)) ? TokenParameters.LLM_KLC_THRESHOLD : Double.NaN;
    }

    /**
     * A KLC threshold as written (in {@link DiluNames#KLC_THRESHOLD}, or where a reader stored one it read there): the
     * ratio when it is a plain decimal in (1, {@link TokenParameters#MAX_KLC_THRESHOLD}], else {@code NaN}.
     */
    public static double klcThreshold(String value) {
        String v = value.strip();
        if (v.isEmpty() || v.length() > 12 || !v.matches("[0-9]+(\\.[0-9]+)?")) {
            return Double.NaN;
        }
        double ratio = Double.parseDouble(v);
        return ratio > 1 && ratio <= TokenParameters.MAX_KLC_THRESHOLD ? ratio : Double.NaN;
    }

    private static int parseLimit(String value, int smRequest) {
        int limit = parsePositive(value);
        return limit >= Math.max(Quota.MIN_SM, smRequest) && limit <= Quota.MAX_SM ? limit : -1;
    }

    private static int parsePositive(String value) {
        String v = value.strip();
        if (v.isEmpty() || v.length() > 9 || !v.chars().allMatch(Character::isDigit)) {
            return -1;
        }
        return Integer.parseInt(v);
    }
}
