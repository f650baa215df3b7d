package io.dilu.core.profiling;

/**
 * Result of training profiling.
 *
 * @param smRequest smallest SM percent reaching the request fraction of the exclusive throughput
 * @param smLimit smallest SM percent reaching (almost) the exclusive throughput
 * @param exclusiveThroughput throughput at 100% SM
 * @param requestThroughput throughput at the request
 * @param limitThroughput throughput at the limit (the search always ran both settings: no extra trial)
 * @param trials distinct trials the search ran
 */
public record TrainingProfile(int smRequest, int smLimit, double exclusiveThroughput, double requestThroughput,
        double limitThroughput, int trials) {}
