package io.dilu.core.scaling;

/**
 * Requests per second one instance of a function serves: the capacity lazy scaling compares the rate with, and
 * where it came from (for logs and status).
 *
 * @param rps what one instance serves at its SM request
 * @param source where {@code rps} came from
 * @param rpsAtLimit what one instance serves at its SM limit, NaN when unknown: how much of a burst vertical
 *     scaling can take before another instance is needed (the burst guard's threshold)
 */
public record InstanceRate(double rps, String source, double rpsAtLimit) {

    /** A rate whose value at the limit is unknown. */
    public InstanceRate(double rps, String source) {
        this(rps, source, Double.NaN);
    }
}
