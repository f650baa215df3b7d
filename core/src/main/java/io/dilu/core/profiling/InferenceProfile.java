package io.dilu.core.profiling;

/**
 * Result of inference profiling: the most cost-efficient setting that meets the SLO.
 *
 * @param smRequest SM percent of the chosen setting
 * @param smLimit {@code min(100, 2 × request)}, headroom for bursts
 * @param batchSize inference batch size of the chosen setting
 * @param throughputEfficacy requests per second per SM percent at that setting
 * @param servingThroughput requests per second one instance serves at its request
 * @param trials distinct trials the search ran
 */
public record InferenceProfile(
        int smRequest, int smLimit, int batchSize, double throughputEfficacy, double servingThroughput, int trials) {}
