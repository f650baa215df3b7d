package io.dilu.kube.profile;

import java.util.Optional;

/**
 * What a profile gives a function's pods, from its hand-written spec or its profiled status
 * ({@link GpuFunctionProfile#settings()}).
 *
 * @param smRequest percent of one GPU
 * @param smLimit percent of one GPU, when set
 * @param memoryMiB GPU memory per GPU
 * @param llm {@code type: llm-inference}
 * @param servingThroughputRps requests per second one instance serves at its request, when known
 * @param servingThroughputRpsAtLimit requests per second one instance serves at its limit, when known: at least
 *     {@code servingThroughputRps}
 */
public record ProfileSettings(String function, int smRequest, Optional<Integer> smLimit, long memoryMiB,
        Optional<Integer> batchSize, Optional<String> priority, boolean llm, Optional<Double> klcThreshold,
        Optional<Double> servingThroughputRps, Optional<Double> servingThroughputRpsAtLimit) {

    /** Settings whose rate at the limit is unknown. */
    public ProfileSettings(String function, int smRequest, Optional<Integer> smLimit, long memoryMiB,
            Optional<Integer> batchSize, Optional<String> priority, boolean llm, Optional<Double> klcThreshold,
            Optional<Double> servingThroughputRps) {
        this(function, smRequest, smLimit, memoryMiB, batchSize, priority, llm, klcThreshold, servingThroughputRps,
                Optional.empty());
    }
}
