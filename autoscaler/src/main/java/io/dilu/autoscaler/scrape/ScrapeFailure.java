package io.dilu.autoscaler.scrape;

/**
 * Why a pod gave no sample this tick: the {@code reason} tag of {@code dilu_autoscaler_scrape_failures_total}. Few
 * and fixed, so the metric's cardinality does not grow with what pods answer.
 */
public enum ScrapeFailure {
    /** The body, or its announced Content-Length, is over {@code dilu.autoscaler.scrape-max-bytes}. */
    TOO_LARGE("too-large"),
    /** Connect, headers and body did not all arrive within {@code dilu.autoscaler.scrape-timeout}. */
    DEADLINE("deadline"),
    /** Not HTTP, not a {@code Stat}, or cut short. */
    MALFORMED("malformed"),
    /** A {@code Stat} whose counts no pod can have: not finite, negative, proxied above received, above the bound. */
    IMPLAUSIBLE("implausible"),
    /** An HTTP status other than 200. */
    HTTP_STATUS("http-status"),
    /** No connection, or it broke other than by ending early. */
    UNREACHABLE("unreachable");

    private final String reason;

    ScrapeFailure(String reason) {
        this.reason = reason;
    }

    /** The metric tag's value. */
    public String reason() {
        return reason;
    }
}
