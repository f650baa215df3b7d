package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;

/**
 * One revision's metric, per second, averaged as Knative's autoscaler averages it (its windowed buckets): over the
 * last {@code window}, or, when the data began less than that ago, over the seconds since it began; seconds
 * without a write inside that span count as zero; a whole window without a write starts the data over. The KPA
 * policy of the co-scaling simulator and the autoscaler's KPA class both decide on these averages.
 */
public final class KnativeMetricWindow {

    private final double[] values;
    private final long[] seconds;
    private long firstWrite = Long.MIN_VALUE;
    private long lastWrite = Long.MIN_VALUE;

    /** @param capacity the longest window that will be asked for */
    public KnativeMetricWindow(Duration capacity) {
        long n = capacity.toSeconds();
        if (n < 1 || n > 3600) {
            throw new IllegalArgumentException("capacity must be in 1s..1h, got " + capacity);
        }
        values = new double[(int) n];
        seconds = new long[(int) n];
        java.util.Arrays.fill(seconds, Long.MIN_VALUE);
    }

    /** The longest window this keeps. */
    public Duration capacity() {
        return Duration.ofSeconds(values.length);
    }

    /** Records the metric of the second containing {@code at}; a second written twice keeps the latest value. */
    public void record(Instant at, double value) {
        if (!(value >= 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException("value must be finite and >= 0, got " + value);
        }
        long second = at.getEpochSecond();
        if (lastWrite == Long.MIN_VALUE || second - lastWrite >= values.length) {
            firstWrite = second; // a whole window without data: the average starts over
        }
        lastWrite = Math.max(lastWrite, second);
        int slot = (int) Math.floorMod(second, (long) values.length);
        seconds[slot] = second;
        values[slot] = value;
    }

    /** The average over the last {@code window} ending with the second of {@code now}; 0 without data. */
    public double average(Duration window, Instant now) {
        long span = Math.max(1, Math.min(values.length, window.toSeconds()));
        long newest = now.getEpochSecond();
        if (firstWrite == Long.MIN_VALUE || newest - lastWrite >= values.length) {
            return 0;
        }
        long from = Math.max(firstWrite, newest + 1 - span);
        if (from > newest) {
            return 0;
        }
        double sum = 0;
        for (long s = from; s <= newest; s++) {
            int slot = (int) Math.floorMod(s, (long) values.length);
            if (seconds[slot] == s) {
                sum += values[slot];
            }
        }
        return sum / (newest + 1 - from);
    }
}
