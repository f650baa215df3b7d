package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;

/**
 * A function's idle times (or gaps between bursts) in fixed bins over a limited range, plus a count of those at
 * or beyond the range. Immutable: {@link #record} returns a new one. Reconstructible from its bins
 * ({@link #of}) and stored as a short string ({@link #encode}, {@link #decode}), so an autoscaler can keep it
 * across restarts.
 */
public final class GapHistogram {

    /** More bins than this is a mistake (1-second bins over a day are 86,400). */
    static final int MAX_BINS = 100_000;

    private final Duration bin;
    private final int[] counts;
    private final long outOfRange;
    private final long inRange;

    private GapHistogram(Duration bin, int[] counts, long outOfRange) {
        this.bin = bin;
        this.counts = counts;
        this.outOfRange = outOfRange;
        this.inRange = Arrays.stream(counts).asLongStream().sum();
    }

    public static GapHistogram empty(Duration bin, Duration range) {
        checkShape(bin, range);
        return new GapHistogram(bin, new int[(int) (range.toNanos() / bin.toNanos())], 0);
    }

    /** The histogram with these bin counts (bin {@code i} holds idle times in {@code [i·bin, (i+1)·bin)}). */
    public static GapHistogram of(Duration bin, int[] counts, long outOfRange) {
        if (bin == null || !bin.isPositive()) {
            throw new IllegalArgumentException("bin must be > 0, got " + bin);
        }
        checkShape(bin, bin.multipliedBy(counts.length));
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] < 0) {
                throw new IllegalArgumentException("counts[" + i + "] must be >= 0, got " + counts[i]);
            }
        }
        if (outOfRange < 0) {
            throw new IllegalArgumentException("outOfRange must be >= 0, got " + outOfRange);
        }
        return new GapHistogram(bin, counts.clone(), outOfRange);
    }

    static void checkShape(Duration bin, Duration range) {
        if (bin == null || !bin.isPositive() || KeepAlive.PAPER_BIN.toNanos() % bin.toNanos() != 0) {
            throw new IllegalArgumentException("bin must be > 0 and divide a minute (e.g. PT1S, PT10S, PT1M), got " + bin);
        }
        if (range == null || !range.isPositive() || range.toNanos() % KeepAlive.PAPER_BIN.toNanos() != 0) {
            throw new IllegalArgumentException("range must be a positive whole number of minutes, got " + range);
        }
        if (range.toNanos() / bin.toNanos() > MAX_BINS) {
            throw new IllegalArgumentException("range / bin must be at most " + MAX_BINS + " bins, got "
                    + range.toNanos() / bin.toNanos());
        }
    }

    /** This histogram with one more idle time. */
    public GapHistogram record(Duration idle) {
        if (idle == null || idle.isNegative()) {
            throw new IllegalArgumentException("idle must be >= 0, got " + idle);
        }
        long i = idle.toNanos() / bin.toNanos(); // toNanos overflows only past 292 years
        if (i >= counts.length) {
            return new GapHistogram(bin, counts, outOfRange + 1); // counts shared: never written after construction
        }
        int[] next = counts.clone();
        if (next[(int) i] == Integer.MAX_VALUE) { // halve everything: the shape stays, the counts stay ints
            for (int k = 0; k < next.length; k++) {
                next[k] /= 2;
            }
            return new GapHistogram(bin, next, outOfRange / 2).record(idle);
        }
        next[(int) i]++;
        return new GapHistogram(bin, next, outOfRange);
    }

    /** This histogram with the idle time between the end of one activity and the start of the next. */
    public GapHistogram record(Instant activityEnd, Instant nextActivityStart) {
        if (nextActivityStart.isBefore(activityEnd)) {
            throw new IllegalArgumentException("nextActivityStart " + nextActivityStart
                    + " must not be before activityEnd " + activityEnd);
        }
        return record(Duration.between(activityEnd, nextActivityStart));
    }

    public Duration bin() {
        return bin;
    }

    public Duration range() {
        return bin.multipliedBy(counts.length);
    }

    /** A copy of the bin counts. */
    public int[] counts() {
        return counts.clone();
    }

    public long inRange() {
        return inRange;
    }

    public long outOfRange() {
        return outOfRange;
    }

    public long samples() {
        return inRange + outOfRange;
    }

    /** The bin holding the {@code p}-th percentile of the in-range idle times (the first whose running count reaches ⌈p·n⌉). */
    int binAt(double p) {
        long rank = Math.max(1, (long) Math.ceil(p * inRange - 1e-9));
        long seen = 0;
        for (int i = 0; i < counts.length; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return i;
            }
        }
        return counts.length - 1;
    }

    /**
     * Coefficient of variation (population standard deviation over mean) of the counts of bins {@code width} wide.
     * The paper's threshold was set on its 1-minute bins; for the same idle times finer bins scatter the counts and
     * raise the coefficient, so the test is read on 1-minute bins whatever this histogram's own bin.
     */
    double coefficientOfVariation(Duration width) {
        int group = (int) (width.toNanos() / bin.toNanos());
        int groups = counts.length / group;
        double mean = (double) inRange / groups;
        if (mean == 0) {
            return 0;
        }
        double squares = 0;
        for (int g = 0; g < groups; g++) {
            long c = 0;
            for (int k = g * group; k < (g + 1) * group; k++) {
                c += counts[k];
            }
            squares += (c - mean) * (c - mean);
        }
        return Math.sqrt(squares / groups) / mean;
    }

    /**
     * The histogram as one line: {@code bin=PT10S range=PT4H out=3 counts=17:5,18:40} (ISO-8601 durations; only
     * the bins that hold something, as {@code index:count}).
     */
    public String encode() {
        StringBuilder s = new StringBuilder("bin=").append(bin).append(" range=").append(range())
                .append(" out=").append(outOfRange).append(" counts=");
        String sep = "";
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] > 0) {
                s.append(sep).append(i).append(':').append(counts[i]);
                sep = ",";
            }
        }
        return s.toString();
    }

    /** Reads {@link #encode}'s line; a malformed one is refused naming the part and the form expected. */
    public static GapHistogram decode(String line) {
        String[] parts = line == null ? new String[0] : line.strip().split(" ");
        if (parts.length != 4 || !parts[0].startsWith("bin=") || !parts[1].startsWith("range=")
                || !parts[2].startsWith("out=") || !parts[3].startsWith("counts=")) {
            throw new IllegalArgumentException("a histogram must read 'bin=<ISO-8601> range=<ISO-8601> out=<n> "
                    + "counts=<index:count,...>', got '" + line + "'");
        }
        Duration bin = duration("bin", parts[0].substring(4));
        int[] counts = empty(bin, duration("range", parts[1].substring(6))).counts(); // a copy, filled below
        String list = parts[3].substring(7);
        for (String entry : list.isEmpty() ? new String[0] : list.split(",")) {
            int colon = entry.indexOf(':');
            int i = colon < 0 ? -1 : (int) number("counts index", entry.substring(0, colon), counts.length - 1);
            if (i < 0) {
                throw new IllegalArgumentException("counts entries must read index:count, got '" + entry + "'");
            }
            counts[i] = (int) number("counts[" + i + "]", entry.substring(colon + 1), Integer.MAX_VALUE);
        }
        return new GapHistogram(bin, counts, number("out", parts[2].substring(4), Long.MAX_VALUE));
    }

    private static Duration duration(String part, String text) {
        try {
            return Duration.parse(text);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(part + " must be an ISO-8601 duration such as PT10S, got '" + text + "'");
        }
    }

    private static long number(String part, String text, long max) {
        try {
            long n = Long.parseLong(text);
            if (n >= 0 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(part + " must be an integer in 0.." + max + ", got '" + text + "'");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GapHistogram h && h.bin.equals(bin) && h.outOfRange == outOfRange
                && Arrays.equals(h.counts, counts);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * bin.hashCode() + Long.hashCode(outOfRange)) + Arrays.hashCode(counts);
    }

    @Override
    public String toString() {
        return encode();
    }
}

