package io.dilu.loadgen;

/**
 * A load run so far.
 *
 * @param elapsedSeconds since the run started
 * @param due requests due so far
 * @param sent requests sent to a target
 * @param answered requests answered, whatever the status
 * @param failed requests ended without a 2xx (failed, or answered with another status)
 * @param buffered requests waiting for a target or for room under the bound on requests in flight
 * @param inFlight requests sent and not yet ended
 * @param p95Seconds the 95th percentile of the 2xx answers' latencies so far; NaN before the first
 */
public record Progress(double elapsedSeconds, int due, long sent, long answered, long failed, long buffered,
        long inFlight, double p95Seconds) {}
