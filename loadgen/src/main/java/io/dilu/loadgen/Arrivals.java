package io.dilu.loadgen;

import java.util.SplittableRandom;

/**
 * When a trace's requests are due, in order. Second {@code s} gets as many requests as the trace's rates add
 * up to by then (fractions carry over to the next second, so a per-request trace replays its exact counts and
 * a run of a rate trace sends its total), at instants of a Poisson process conditioned on that count: uniform
 * order statistics within the second, drawn as normalized exponential gaps. Seeded, so two runs (a policy and
 * its baseline) send the same requests at the same offsets.
 */
final class Arrivals {

    /** One request: the second it belongs to and its offset in that second, in nanoseconds (0 ≤ offset < 1 s). */
    record Arrival(int second, long offsetNanos) {
        long dueNanos(long start) {
            return start + second * NANOS_PER_SECOND + offsetNanos;
        }
    }

    static final long NANOS_PER_SECOND = 1_000_000_000L;
    /** Rates added up as doubles drift (0.1 ten times is 0.999…); a count this close to the next integer is it. */
    private static final double ROUNDING = 1e-9;

    private final RateTrace trace;
    private final SplittableRandom random;
    private double cumulative;
    private long released;
    private int second = -1;
    private long[] offsets = new long[0];
    private int index;

    Arrivals(RateTrace trace, long seed) {
        this.trace = trace;
        this.random = new SplittableRandom(seed);
    }

    /** How many requests a run of {@code trace} sends: its rates added up as {@link #next()} adds them. */
    static long count(RateTrace trace) {
        double sum = 0;
        for (int s = 0; s < trace.seconds(); s++) {
            sum += trace.rate(s);
        }
        return (long) Math.floor(sum + ROUNDING);
    }

    /** The next request, or null after the trace's last second. */
    Arrival next() {
        while (index == offsets.length) {
            if (second + 1 == trace.seconds()) {
                return null;
            }
            second++;
            offsets = offsets(second);
            index = 0;
        }
        return new Arrival(second, offsets[index++]);
    }

    private long[] offsets(int s) {
        cumulative += trace.rate(s);
        long count = (long) Math.floor(cumulative + ROUNDING) - released;
        released += count;
        double[] sums = new double[(int) count + 1];
        double sum = 0;
        for (int i = 0; i < sums.length; i++) {
            sum -= Math.log(1 - random.nextDouble());
            sums[i] = sum;
        }
        long[] out = new long[(int) count];
        for (int i = 0; i < out.length; i++) {
            // min: a last gap of 0 (a draw of exactly 0) would put the request at the next second's start
            out[i] = Math.min(NANOS_PER_SECOND - 1, (long) (NANOS_PER_SECOND * (sums[i] / sum)));
        }
        return out;
    }
}
