package io.dilu.core.contract;

import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.core.tokens.TokenParameters;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a pod may take from its neighbours beyond the defaults: SLO priority, an SM limit above
 * {@code min(100, 2 × request)}, a KLC threshold below the node's (its η_violation, {@link TokenParameters}: 1.6
 * unless configured; the LLM mark means 1.3). Each lets a tenant shrink the best-effort pods beside it, so it is a
 * right an administrator grants per namespace with the label {@code dilu.io/allow-slo=true}. The webhook refuses
 * what {@link #violations} names; the node agent, which also sees pods from namespaces the webhook does not cover,
 * applies {@link #grant}. Both are given the threshold their configuration runs the nodes at.
 */
public final class QuotaRights {

    private QuotaRights() {}

    /** The namespace label that grants the right. */
    public static final String ALLOW_SLO_LABEL = "dilu.io/allow-slo";

    private static final String HOW = " unless the namespace has the label " + ALLOW_SLO_LABEL + "=true (granted by an administrator)";

    /** Whether a namespace's labels grant the right. */
    public static boolean granted(Map<String, String> namespaceLabels) {
        return namespaceLabels != null && "true".equals(namespaceLabels.get(ALLOW_SLO_LABEL));
    }

    /**
     * What the annotations ask for that needs the right; empty when {@code allowed} or when they ask for none.
     *
     * @param nodeThreshold the KLC threshold the nodes hold an SLO instance to when it names none
     */
    public static List<FieldError> violations(Map<String, String> annotations, int smRequest, boolean allowed,
            double nodeThreshold) {
        List<FieldError> errors = new ArrayList<>();
        if (allowed) {
            return errors;
        }
        String priority = annotations.get(DiluNames.PRIORITY);
        if (Priority.SLO.label().equals(priority)) {
            errors.add(new FieldError(DiluNames.PRIORITY, priority, Priority.BEST_EFFORT.label() + HOW));
        }
        String limit = annotations.get(DiluNames.SM_LIMIT);
        int defaultLimit = Quota.defaultLimit(Math.clamp(smRequest, Quota.MIN_SM, Quota.MAX_SM));
        if (limit != null && PodQuotaAnnotations.smLimit(annotations, smRequest) > defaultLimit) {
            errors.add(new FieldError(DiluNames.SM_LIMIT, limit,
                    "at most " + defaultLimit + " (min(100, 2 × request))" + HOW));
        }
        double threshold = PodQuotaAnnotations.klcThreshold(annotations);
        if (threshold < nodeThreshold) {
            String field = annotations.containsKey(DiluNames.KLC_THRESHOLD) ? DiluNames.KLC_THRESHOLD : DiluNames.LLM;
            errors.add(new FieldError(field, annotations.get(field), field.equals(DiluNames.LLM)
                    ? "false" + HOW : "at least " + nodeThreshold + HOW));
        }
        return errors;
    }

    /**
     * The quota a pod gets: what it asks for where {@code allowed}, else the defaults in place of what needs
     * the right (best-effort priority, the default limit at most, the node's KLC threshold).
     *
     * @param nodeThreshold the KLC threshold the node holds an SLO instance to when it names none
     */
    public static PodQuota grant(Map<String, String> annotations, int smRequest, Priority fallback, boolean allowed,
            double nodeThreshold) {
        int limit = PodQuotaAnnotations.smLimit(annotations, smRequest);
        Priority priority = PodQuotaAnnotations.priority(annotations, fallback);
        double threshold = PodQuotaAnnotations.klcThreshold(annotations);
        if (allowed) {
            return new PodQuota(limit, priority, threshold);
        }
        return new PodQuota(Math.min(limit, Quota.defaultLimit(Math.clamp(smRequest, Quota.MIN_SM, Quota.MAX_SM))),
                Priority.BEST_EFFORT, threshold < nodeThreshold ? Double.NaN : threshold);
    }

    /**
     * The quota a pod's share runs with.
     *
     * @param smLimit percent
     * @param klcThreshold NaN for the node's default
     */
    public record PodQuota(int smLimit, Priority priority, double klcThreshold) {}
}
