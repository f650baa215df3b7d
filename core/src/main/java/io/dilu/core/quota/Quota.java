package io.dilu.core.quota;

import java.util.ArrayList;
import java.util.List;

/**
 * What one instance may use of one GPU: an SM share between {@code smRequest} (guaranteed) and
 * {@code smLimit} (the most it is ever given), device memory, the inference batch size and priority.
 *
 * <p>Shares are percent of one GPU's SMs, as in the {@code dilu.io/gpu-sm} resource. Construct through
 * {@link #of} or check with {@link #validate}: a record built directly is trusted as valid.
 *
 * @param smRequest guaranteed SM share, percent, 1..100
 * @param smLimit the most SM share vertical scaling may grant, percent, smRequest..100
 * @param memoryMib device memory, MiB, at least 1
 * @param batchSize inference batch size, at least 1 (1 for training)
 * @param priority SLO-sensitive or best-effort
 */
public record Quota(int smRequest, int smLimit, long memoryMib, int batchSize, Priority priority) {

    public static final int MIN_SM = 1;
    public static final int MAX_SM = 100;

    /**
     * GPU memory of a container that asks for {@code dilu.io/gpu-sm} and names no {@code dilu.io/gpu-memory}: what
     * the scheduler extender books for it (its {@code default-memory-mib} defaults to this) and what the node agent
     * holds a share to until its pod is known.
     */
    public static final long DEFAULT_MEMORY_MIB = 1024;

    /** The paper's default limit: twice the request, capped at a whole GPU. */
    public static int defaultLimit(int smRequest) {
        return Math.min(MAX_SM, 2 * smRequest);
    }

    /**
     * Every reason these values cannot form a quota, empty when they can.
     *
     * @param maxMemoryMib the largest GPU memory the cluster has, or {@link Long#MAX_VALUE} when unknown
     */
    public static List<FieldError> validate(
            int smRequest, int smLimit, long memoryMib, int batchSize, long maxMemoryMib) {
        List<FieldError> errors = new ArrayList<>();
        if (smRequest < MIN_SM || smRequest > MAX_SM) {
            errors.add(new FieldError("smRequest", Integer.toString(smRequest), "an integer percent in 1..100"));
        }
        if (smLimit < Math.max(MIN_SM, Math.min(smRequest, MAX_SM)) || smLimit > MAX_SM) {
            errors.add(new FieldError("smLimit", Integer.toString(smLimit),
                    "an integer percent in " + Math.max(MIN_SM, Math.min(smRequest, MAX_SM)) + "..100 (request..100)"));
        }
        if (memoryMib < 1 || memoryMib > maxMemoryMib) {
            errors.add(new FieldError("memoryMib", Long.toString(memoryMib),
                    maxMemoryMib == Long.MAX_VALUE ? "at least 1" : "in 1.." + maxMemoryMib + " (the largest GPU)"));
        }
        if (batchSize < 1) {
            errors.add(new FieldError("batchSize", Integer.toString(batchSize), "at least 1"));
        }
        return errors;
    }

    /** A validated quota; throws {@link InvalidQuotaException} naming every bad field. */
    public static Quota of(int smRequest, int smLimit, long memoryMib, int batchSize, Priority priority) {
        List<FieldError> errors = validate(smRequest, smLimit, memoryMib, batchSize, Long.MAX_VALUE);
        if (priority == null) {
            errors = new ArrayList<>(errors);
            errors.add(new FieldError("priority", "null", "one of slo, best-effort"));
        }
        if (!errors.isEmpty()) {
            throw new InvalidQuotaException(errors);
        }
        return new Quota(smRequest, smLimit, memoryMib, batchSize, priority);
    }

    /** SM request as thousandths of a GPU, the unit placement works in. */
    public int requestMilli() {
        return smRequest * 10;
    }

    /** SM limit as thousandths of a GPU. */
    public int limitMilli() {
        return smLimit * 10;
    }
}
