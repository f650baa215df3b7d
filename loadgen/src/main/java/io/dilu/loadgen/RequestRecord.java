package io.dilu.loadgen;

/**
 * One request of a load run: when it was due and how it ended.
 *
 * @param second the trace's second it belongs to
 * @param offsetSeconds when in that second it was due (0 ≤ offset < 1)
 */
public record RequestRecord(int second, double offsetSeconds, Outcome outcome) {}
