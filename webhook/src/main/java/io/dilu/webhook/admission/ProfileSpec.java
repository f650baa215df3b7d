package io.dilu.webhook.admission;

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
}
