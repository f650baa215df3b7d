package io.dilu.loadgen;

import java.time.Duration;

/**
 * How a load run treats its requests.
 *
 * @param timeout how long after it was due a request is given up (as {@link Outcome.Failure#TIMEOUT}), whether it
 *     waited in the buffer or in flight; a client in front of Knative's activator sees it so
 * @param maxOutstanding most requests in flight at once, over all targets: a bound on the generator's own
 *     connections; a request due beyond it waits in the buffer (its latency still counts from when it was due)
 * @param maxBuffered most requests waiting for a target or for room under {@code maxOutstanding}; one due when
 *     the buffer is full fails at once as {@link Outcome.Failure#OVERFLOW}
 */
public record LoadSettings(Duration timeout, int maxOutstanding, int maxBuffered) {

    public static final Duration MIN_TIMEOUT = Duration.ofMillis(1);
    public static final Duration MAX_TIMEOUT = Duration.ofHours(1);
    public static final int MAX_OUTSTANDING = 65_536;
    public static final int MAX_BUFFERED = 10_000_000;

    public static final int DEFAULT_TIMEOUT_SECONDS = 30;
    /** A connection each: under the usual limit of 1,024 open files. */
    public static final int DEFAULT_MAX_OUTSTANDING = 512;
    public static final int DEFAULT_MAX_BUFFERED = 10_000;
    public static final LoadSettings DEFAULTS = new LoadSettings(Duration.ofSeconds(DEFAULT_TIMEOUT_SECONDS),
            DEFAULT_MAX_OUTSTANDING, DEFAULT_MAX_BUFFERED);

    public LoadSettings {
        if (timeout.compareTo(MIN_TIMEOUT) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException("timeout must be in 1 ms..1 h, got " + timeout);
        }
        if (maxOutstanding < 1 || maxOutstanding > MAX_OUTSTANDING) {
            throw new IllegalArgumentException("maxOutstanding must be in 1.." + MAX_OUTSTANDING + ", got "
                    + maxOutstanding);
        }
        if (maxBuffered < 0 || maxBuffered > MAX_BUFFERED) {
            throw new IllegalArgumentException("maxBuffered must be in 0.." + MAX_BUFFERED + ", got " + maxBuffered);
        }
    }
}
