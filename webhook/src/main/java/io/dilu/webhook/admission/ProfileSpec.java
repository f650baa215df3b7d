package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a {@code GpuFunctionProfile} says about a function (its spec; see manifests/crds).
 *
 * @param smRequest percent of one GPU
 * @param smLimit percent of one GPU, when profiled
 * @param llm {@code type: llm-inference}: its SLO instances are judged by the LLM KLC threshold (1.3)
 * @param klcThreshold the function's own KLC threshold, when set
 */
public record ProfileSpec(String function, int smRequest, Optional<Integer> smLimit, long memoryMiB,
        Optional<Integer> batchSize, Optional<String> priority, boolean llm, Optional<Double> klcThreshold) {

    /** A profile of a function that is not an LLM and keeps the node's KLC threshold. */
    public ProfileSpec(String function, int smRequest, Optional<Integer> smLimit, long memoryMiB,
            Optional<Integer> batchSize, Optional<String> priority) {
        this(function, smRequest, smLimit, memoryMiB, batchSize, priority, false, Optional.empty());
    }

    /**
     * The pod annotations the profile gives. In this order the KLC threshold comes before the LLM mark, so that
     * a mark beside a threshold no longer lowers it when the two are judged one after the other.
     */
    Map<String, String> annotations() {
        Map<String, String> a = new LinkedHashMap<>();
        a.put(DiluNames.FUNCTION, function);
        smLimit.ifPresent(l -> a.put(DiluNames.SM_LIMIT, Integer.toString(l)));
        batchSize.ifPresent(b -> a.put(DiluNames.BATCH_SIZE, Integer.toString(b)));
        klcThreshold.ifPresent(t -> a.put(DiluNames.KLC_THRESHOLD, BigDecimal.valueOf(t).stripTrailingZeros().toPlainString()));
        if (llm) {
            a.put(DiluNames.LLM, "true");
        }
        priority.ifPresent(p -> a.put(DiluNames.PRIORITY, p));
        return a;
    }
}
