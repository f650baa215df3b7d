package io.dilu.core.tokens;

import java.time.Duration;

/**
 * The knobs of Algorithm 2.
 *
 * @param maxTokens thread blocks the whole GPU is worth per period; an instance is granted at most
 *     {@code maxTokens × limit}
 * @param etaViolation the ratio T/Tmin of an SLO instance's kernel launch cycle to the smallest it has shown
 *     above which it is in EMERGENCY: 1.6 by default (the paper's η_violation, applied as Dilu's public
 *     RCKM applies it: as a ratio, not as the relative change T/Tmin − 1), 1.3 for LLM functions; an
 *     instance may carry its own
 * @param etaIncrease growth factor per period while recovering (1.3)
 * @param period how often tokens are issued (5 ms)
 * @param rateWindow periods of launch history that decide whether an instance is idle: 10 (50 ms), long enough
 *     to tell an instance between two batches from an idle one, short enough that best-effort neighbours get
 *     the GPU back within 50 ms of the last burst (20 left the emulated training job 15 points lower for
 *     0.08 lower inference p95; docs/benchmarks.md)
 * @param floor smallest share a shrinking best-effort instance keeps, fraction of its request, so that an
 *     emergency never starves it outright
 * @param klcMemory how long the smallest KLC seen stays the reference; older minima are forgotten so that a
 *     lasting change of workload (a new batch size, a new model) is not judged against a stale best case
 */
public record TokenParameters(long maxTokens, double etaViolation, double etaIncrease, Duration period,
        int rateWindow, double floor, Duration klcMemory) {

    /** η_violation for LLM functions, whose decoding cycles stretch less before latency suffers (paper, §3.4.1). */
    public static final double LLM_KLC_THRESHOLD = 1.3;

    /** The largest threshold accepted: a cycle ten times its best is contention by any measure. */
    public static final double MAX_KLC_THRESHOLD = 10;

    public static final TokenParameters DEFAULTS =
            new TokenParameters(10_000, 1.6, 1.3, Duration.ofMillis(5), 10, 0.05, Duration.ofSeconds(30));

    public TokenParameters {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be at least 1, got " + maxTokens);
        }
        if (!(etaViolation > 1 && etaViolation <= MAX_KLC_THRESHOLD)) {
            throw new IllegalArgumentException(
                    "etaViolation must be in (1, " + MAX_KLC_THRESHOLD + "] (a ratio T/Tmin), got " + etaViolation);
        }
        if (!(etaIncrease > 1)) {
            throw new IllegalArgumentException("etaIncrease must be > 1, got " + etaIncrease);
        }
        if (period == null || period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("period must be positive, got " + period);
        }
        if (rateWindow < 1) {
            throw new IllegalArgumentException("rateWindow must be at least 1, got " + rateWindow);
        }
        if (!(floor > 0 && floor <= 1)) {
            throw new IllegalArgumentException("floor must be in (0, 1], got " + floor);
        }
        if (klcMemory == null || klcMemory.compareTo(period) < 0) {
            throw new IllegalArgumentException("klcMemory must be at least one period, got " + klcMemory);
        }
    }

    public TokenParameters withMaxTokens(long tokens) {
        return new TokenParameters(tokens, etaViolation, etaIncrease, period, rateWindow, floor, klcMemory);
    }

    public TokenParameters withPeriod(Duration p) {
        return new TokenParameters(maxTokens, etaViolation, etaIncrease, p, rateWindow, floor, klcMemory);
    }

    public TokenParameters withEtaViolation(double eta) {
        return new TokenParameters(maxTokens, eta, etaIncrease, period, rateWindow, floor, klcMemory);
    }

    /**
     * MaxTokens of one GPU: the thread blocks its SMs run in one period when each block takes {@code blockTime}
     * (the paper counts tokens in blocks; a GPU with more SMs is worth more of them).
     */
    public static long maxTokensFor(int sms, Duration period, Duration blockTime) {
        if (sms < 1) {
            throw new IllegalArgumentException("sms must be at least 1, got " + sms);
        }
        if (blockTime == null || blockTime.isNegative() || blockTime.isZero() || blockTime.compareTo(period) > 0) {
            throw new IllegalArgumentException("blockTime must be in (0, period " + period + "], got " + blockTime);
        }
        return Math.max(1, sms * (period.toNanos() / blockTime.toNanos()));
    }
}
