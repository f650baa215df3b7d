package io.dilu.core.profiling;

/**
 * Result of inference profiling: the most cost-efficient setting that meets the SLO.
 *
 * @param smRequest SM percent of the chosen setting
 * @param smLimit {@code min(100, 2 × request)}, headroom for bursts
 * @param batchSize inference batch size of the chosen setting
 * @param throughputEfficacy requests per second per SM percent at that setting
 * @param servingThroughput requests per second one instance serves at its request
 * @param servingThroughputAtLimit requests per second one instance serves at its limit, same batch: what vertical
 *     scaling can take of a burst before another instance is needed; at least {@code servingThroughput} (a larger
 *     share never serves less, so a lower measurement is noise and reads as the request's rate); NaN when the trial
 *     at the limit failed
 * @param trials distinct trials run, the one at the limit included when the search had not run that setting
 */
public record InferenceProfile(int smRequest, int smLimit, int batchSize, double throughputEfficacy, double servingThroughput,
        double servingThroughputAtLimit, int trials) {}
