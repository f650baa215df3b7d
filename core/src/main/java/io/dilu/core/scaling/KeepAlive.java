package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;

/**
 * How long an instance no longer needed stays, and when one is started again before the function is expected back,
 * learned from the function's own history: the hybrid histogram policy of Shahrad et al., "Serverless in the Wild:
 * Characterizing and Optimizing the Serverless Workload at a Large Cloud Provider" (USENIX ATC'20, §4).
 *
 * <p>Why: a fixed keep-alive is too long for a function that returns every few hours (a GPU held for nothing) and
 * too short for one that returns just after it (a cold start every time). The function's idle times say which:
 * per function, a histogram of the time between the end of one activity and the start of the next. When it holds a
 * pattern, the instance goes at once, one is pre-warmed at the head of the idle times (their 5th percentile, less a
 * 10% margin) and kept until their tail (the 99th percentile, plus 10%); a head of zero means the function is back
 * too soon to unload at all. When it holds no pattern yet (too few idle times, most of them beyond the range, or a
 * histogram too flat to predict from) the decision falls back to a fixed keep-alive.
 *
 * <p>Used twice per function: over its idle times (the last instance, down to zero), and over the gaps between its
 * bursts — stretches of a rate above a threshold the caller passes, such as what the instances it keeps anyway
 * serve — so that an extra instance released after one burst is pre-warmed before the next. A {@link GapTracker} turns
 * the per-second rates an autoscaler sees into those gaps; a {@link GapHistogram} (immutable, a short string when
 * stored) keeps them; {@link #decide} answers every tick. Pure: all time is passed in.
 *
 * <p>Left out: the paper's third branch, an ARIMA forecast for functions whose idle times mostly exceed the range.
 * Core has no model-fitting library and fits nothing per tick; such a function gets the fixed keep-alive here, and a
 * cold start when it returns after hours, as under any fixed keep-alive.
 */
public final class KeepAlive {

    /** The paper's bin (1 minute); its representativeness test is always read on bins of this width. */
    public static final Duration PAPER_BIN = Duration.ofMinutes(1);
    /** The paper's range (4 hours): longer idle times are counted as out of range, not binned. */
    public static final Duration PAPER_RANGE = Duration.ofHours(4);
    /**
     * This project's bin. The paper's 1-minute bin matches the per-minute invocation counts of the Azure trace it was
     * evaluated on; with its 10% margin, rounding a percentile to a whole bin stays within the margin only for idle
     * times of ten bins or more — 10 minutes, the fixed keep-alive it set out to beat. Here the autoscaler sees a rate
     * every second and the idle times that matter are the minutes between bursts; 10 s keeps the same ratio (a bin
     * at most the margin of the idle time) from 100 s, about where an instance can go at all (the lazy scaler's 40 s
     * window and Knative's 30 s grace come first). Not chosen from a benchmark.
     */
    public static final Duration BIN = Duration.ofSeconds(10);
    /** The fixed keep-alive the paper compares against: 10 minutes, as AWS Lambda and OpenWhisk keep an instance. */
    public static final Duration FIXED_KEEP_ALIVE = Duration.ofMinutes(10);
    /**
     * Fewest idle times before the histogram is trusted. Ours, not the paper's (its re-implementations each pick
     * their own): below 1/0.05 = 20 the 5th percentile is simply the shortest idle time seen.
     */
    public static final int MIN_SAMPLES = 20;

    /**
     * The policy's knobs.
     *
     * @param bin width of a histogram bin; divides a minute, so the representativeness test can read the paper's bins
     * @param range idle times at or beyond it are out of range; whole minutes
     * @param headPercentile where the pre-warm cut-off is read (paper: 5th percentile)
     * @param tailPercentile where the keep-alive cut-off is read (paper: 99th percentile)
     * @param margin the head is shortened and the tail lengthened by this share (paper: 10%)
     * @param cvThreshold a histogram whose 1-minute bin counts have a coefficient of variation below this is too flat
     *     to predict from (paper: 2)
     * @param minSamples fewest idle times before the histogram is trusted
     * @param maxOutOfRange largest share of idle times beyond the range before the histogram is not trusted (the
     *     paper's "most"; dslab's re-implementation of the policy reads it as 0.5 too)
     * @param fallbackKeepAlive how long the instance stays when no pattern is trusted
     */
    public record Parameters(Duration bin, Duration range, double headPercentile, double tailPercentile, double margin,
            double cvThreshold, int minSamples, double maxOutOfRange, Duration fallbackKeepAlive) {

        /**
         * The paper as published: 1-minute bins over 4 hours, and, without a pattern, no pre-warming and a keep-alive
         * as long as the histogram's range (its "standard keep-alive" while learning).
         */
        public static final Parameters PAPER = new Parameters(PAPER_BIN, PAPER_RANGE, 0.05, 0.99, 0.10, 2, MIN_SAMPLES,
                0.5, PAPER_RANGE);

        /**
         * This project's: the paper's policy on 10-second bins ({@link #BIN}), falling back to the 10-minute fixed
         * keep-alive rather than the paper's 4 hours, which for a GPU instance of a function seen once is hours of a
         * GPU share held on no evidence.
         */
        public static final Parameters DEFAULTS = new Parameters(BIN, PAPER_RANGE, 0.05, 0.99, 0.10, 2, MIN_SAMPLES,
                0.5, FIXED_KEEP_ALIVE);

        public Parameters {
            GapHistogram.checkShape(bin, range);
            if (!(headPercentile > 0 && headPercentile < 1)) {
                throw new IllegalArgumentException("headPercentile must be in (0, 1), got " + headPercentile);
            }
            if (!(tailPercentile >= headPercentile && tailPercentile <= 1)) {
                throw new IllegalArgumentException("tailPercentile must be in [headPercentile, 1] = [" + headPercentile
                        + ", 1], got " + tailPercentile);
            }
            if (!(margin >= 0 && margin < 1)) {
                throw new IllegalArgumentException("margin must be in [0, 1), got " + margin);
            }
            if (!(cvThreshold >= 0) || Double.isInfinite(cvThreshold)) {
                throw new IllegalArgumentException("cvThreshold must be finite and >= 0, got " + cvThreshold);
            }
            if (minSamples < 1) {
                throw new IllegalArgumentException("minSamples must be >= 1, got " + minSamples);
            }
            if (!(maxOutOfRange >= 0 && maxOutOfRange < 1)) {
                throw new IllegalArgumentException("maxOutOfRange must be in [0, 1), got " + maxOutOfRange);
            }
            if (fallbackKeepAlive == null || fallbackKeepAlive.isNegative()) {
                throw new IllegalArgumentException("fallbackKeepAlive must be >= 0, got " + fallbackKeepAlive);
            }
        }
    }

    /** What a histogram says about the function's idle times. */
    public sealed interface Pattern {

        /** Idle times recorded, in range or not. */
        long samples();

        /**
         * A pattern to predict from.
         *
         * @param cv coefficient of variation of the histogram's 1-minute bin counts
         * @param head lower edge of the bin holding the head percentile
         * @param tail upper edge of the bin holding the tail percentile
         */
        record Learned(long samples, double cv, Duration head, Duration tail) implements Pattern {}

        /** No pattern to trust yet; {@code why} names the numbers. */
        record Unknown(long samples, Reason reason, String why) implements Pattern {}

        /** Why no pattern is trusted. */
        enum Reason {
            /** Fewer idle times than {@link Parameters#minSamples()}. */
            TOO_FEW_SAMPLES,
            /** More than {@link Parameters#maxOutOfRange()} of them beyond the range (the paper's ARIMA case). */
            OUT_OF_RANGE,
            /** The bin counts vary too little: the idle times are spread too evenly to predict the next one. */
            NOT_REPRESENTATIVE
        }
    }

    /** For a function that went idle at {@link #lastActive()}: when one instance should be held. */
    public sealed interface Decision {

        Instant lastActive();

        /** After this, no instance is held for the function. */
        Instant keepUntil();

        /** Whether one instance should be held at {@code now} (not before {@link #lastActive()}). */
        boolean warm(Instant now);

        /**
         * From the function's pattern: the instance stays until {@code releaseAt} ({@code lastActive} when it goes at
         * once, {@code keepUntil} when the function is back too soon to unload), one is asked for again at
         * {@code prewarmAt} (a warm-up ahead of the head cut-off) and kept until {@code keepUntil}; after that, none.
         */
        record Predicted(Instant lastActive, Instant releaseAt, Instant prewarmAt, Instant keepUntil,
                Pattern.Learned pattern) implements Decision {

            /** Whether the instance is released and pre-warmed later rather than kept through the idle spell. */
            public boolean unloads() {
                return releaseAt.isBefore(prewarmAt);
            }

            @Override
            public boolean warm(Instant now) {
                return now.isBefore(releaseAt) || (!now.isBefore(prewarmAt) && now.isBefore(keepUntil));
            }
        }

        /** No pattern trusted: the instance stays until {@code keepUntil}, the fixed keep-alive after the last activity. */
        record Fixed(Instant lastActive, Instant keepUntil, Pattern.Unknown pattern) implements Decision {
            @Override
            public boolean warm(Instant now) {
                return now.isBefore(keepUntil);
            }
        }
    }

    private final Parameters params;

    public KeepAlive(Parameters params) {
        this.params = params;
    }

    public Parameters parameters() {
        return params;
    }

    /** An empty histogram in this policy's bins. */
    public GapHistogram emptyHistogram() {
        return GapHistogram.empty(params.bin(), params.range());
    }

    /** The paper's three tests in its order — enough samples, few out of range, a peaked histogram — then the cut-offs. */
    public Pattern pattern(GapHistogram h) {
        if (!h.bin().equals(params.bin()) || !h.range().equals(params.range())) {
            throw new IllegalArgumentException("the histogram's bin " + h.bin() + " and range " + h.range()
                    + " must be the parameters' " + params.bin() + " and " + params.range());
        }
        long n = h.samples();
        if (n < params.minSamples()) {
            return new Pattern.Unknown(n, Pattern.Reason.TOO_FEW_SAMPLES,
                    n + " idle times, fewer than " + params.minSamples());
        }
        double outside = (double) h.outOfRange() / n;
        if (outside > params.maxOutOfRange() || h.inRange() == 0) {
            return new Pattern.Unknown(n, Pattern.Reason.OUT_OF_RANGE, h.outOfRange() + " of " + n
                    + " idle times at or beyond " + h.range() + ", more than " + params.maxOutOfRange());
        }
        double cv = h.coefficientOfVariation(PAPER_BIN);
        if (cv < params.cvThreshold()) {
            return new Pattern.Unknown(n, Pattern.Reason.NOT_REPRESENTATIVE, "coefficient of variation " + cv
                    + " of the 1-minute bin counts, below " + params.cvThreshold());
        }
        Duration head = h.bin().multipliedBy(h.binAt(params.headPercentile()));
        Duration tail = h.bin().multipliedBy(h.binAt(params.tailPercentile()) + 1L);
        return new Pattern.Learned(n, cv, head, tail);
    }

    /**
     * What to do for a function idle since {@code lastActive}: a pure function of the histogram and the instants.
     *
     * @param warmup how long an instance takes from being asked for to serving (its cold start): pre-warming starts
     *     that long before the head cut-off, and a function expected back within it is not unloaded
     */
    public Decision decide(GapHistogram h, Instant lastActive, Duration warmup) {
        if (warmup == null || warmup.isNegative()) {
            throw new IllegalArgumentException("warmup must be >= 0, got " + warmup);
        }
        return switch (pattern(h)) {
            case Pattern.Unknown u -> new Decision.Fixed(lastActive, lastActive.plus(params.fallbackKeepAlive()), u);
            case Pattern.Learned l -> {
                Instant keepUntil = lastActive.plus(scaled(l.tail(), 1 + params.margin()));
                Instant prewarmAt = lastActive.plus(scaled(l.head(), 1 - params.margin())).minus(warmup);
                yield prewarmAt.isAfter(lastActive)
                        ? new Decision.Predicted(lastActive, lastActive, prewarmAt, keepUntil, l)
                        : new Decision.Predicted(lastActive, keepUntil, keepUntil, keepUntil, l); // back too soon to unload
            }
        };
    }

    private static Duration scaled(Duration d, double factor) {
        return Duration.ofMillis(Math.round(d.toMillis() * factor));
    }
}
