package io.dilu.webhook.admission;

import java.util.Optional;

/**
 * What a {@code GpuFunctionProfile} says about a function (its spec; see manifests/crds).
 *
 * @param smRequest percent of one GPU
 * @param smLimit percent of one GPU, when profiled
 */
public record ProfileSpec(String function, int smRequest, Optional<Integer> smLimit, long memoryMiB,
        Optional<Integer> batchSize, Optional<String> priority) {}
