package io.dilu.simulator.coscaling;

/**
 * The latency model of the co-scaling simulator: a function's requests wait, first come first served, for
 * the service rate of its ready instances at their current SM shares, treated as a fluid in one-second steps.
 *
 * <p>In a second where {@code λ} requests arrive, {@code B} wait already and the instances serve {@code C}
 * requests per second, {@code min(B + λ, C)} are served and the rest wait on. The requests served in that
 * second waited from {@code B / C} (the first) to {@code B' / C} (the last, with {@code B'} the backlog left
 * at its end, or what a full second's arrivals leave behind), evenly in between — Little's law on a queue
 * whose length changes linearly through the second. Each request then takes {@code s}, one batch's run time
 * at the instance's share. A request violates its SLO when its wait plus {@code s} exceeds it; the share of a
 * second's served requests that do is the part of the interval {@code [s + B/C, s + B'/C]} above the SLO.
 * With no instance ready ({@code C = 0}: the function is at zero or its instances are starting) every
 * request waits, and is judged in the second it is served.
 *
 * <p>What it leaves out: the spread of service times inside a batch and batching waits (both folded into
 * {@code s}), and queueing inside a second when arrivals exceed the rate only briefly (a burst shorter than a
 * second is spread over it).
 */
public final class FluidQueue {

    private FluidQueue() {}

    /**
     * One second's outcome.
     *
     * @param backlog requests still waiting at its end
     * @param served requests served in it
     * @param violations of those, how many exceeded the SLO (fractional: a fluid)
     */
    public record Step(double backlog, double served, double violations) {}

    /**
     * @param backlog requests waiting at the start of the second, ≥ 0
     * @param arrivals requests arriving during it, ≥ 0
     * @param serviceRate requests per second the ready instances serve together, ≥ 0
     * @param serviceSeconds time one request takes once served, ≥ 0
     * @param sloSeconds the latency bound, > 0
     */
    public static Step step(double backlog, double arrivals, double serviceRate, double serviceSeconds, double sloSeconds) {
        require("backlog", backlog, 0);
        require("arrivals", arrivals, 0);
        require("serviceRate", serviceRate, 0);
        require("serviceSeconds", serviceSeconds, 0);
        if (!(sloSeconds > 0) || Double.isInfinite(sloSeconds)) {
            throw new IllegalArgumentException("sloSeconds must be finite and > 0, got " + sloSeconds);
        }
        double waiting = backlog + arrivals;
        double served = Math.min(waiting, serviceRate);
        double left = waiting - served;
        if (served == 0) {
            return new Step(left, 0, 0);
        }
        double firstWait = backlog / serviceRate;
        double lastWait = left / serviceRate;
        double from = serviceSeconds + Math.min(firstWait, lastWait);
        double to = serviceSeconds + Math.max(firstWait, lastWait);
        double late;
        if (to <= from) {
            late = from > sloSeconds ? 1 : 0;
        } else {
            late = Math.clamp((to - sloSeconds) / (to - from), 0, 1);
        }
        return new Step(left, served, served * late);
    }

    private static void require(String field, double value, double min) {
        if (!(value >= min) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(field + " must be finite and >= " + min + ", got " + value);
        }
    }
}
