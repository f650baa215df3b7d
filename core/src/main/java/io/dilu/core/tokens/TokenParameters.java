package io.dilu.core.tokens;

import java.time.Duration;

/**
 * The knobs of Algorithm 2.
 *
 * @param maxTokens thread blocks the whole GPU is worth per period; an instance is granted at most
 *     {@code maxTokens × limit}
 * @param etaViolation relative KLC stretch (ΔT) that declares an emergency: 1.6, or 1.3 for LLMs
 * @param etaIncrease growth factor per period while recovering (1.3)
 * @param period how often tokens are issued (5 ms)
 * @param rateWindow periods of launch history that decide whether an instance is idle
 * @param floor smallest share a shrinking best-effort instance keeps, fraction of its request, so that an
 *     emergency never starves it outright
 * @param klcMemory how long the smallest KLC seen stays the reference; older minima are forgotten so that a
 *     lasting change of workload (a new batch size, a new model) is not judged against a stale best case
 */
public record TokenParameters(long maxTokens, double etaViolation, double etaIncrease, Duration period,
        int rateWindow, double floor, Duration klcMemory) {

    public static final TokenParameters DEFAULTS =
            new TokenParameters(10_000, 1.6, 1.3, Duration.ofMillis(5), 20, 0.05, Duration.ofSeconds(30));

    public TokenParameters {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be at least 1, got " + maxTokens);
        }
        if (!(etaViolation > 0)) {
            throw new IllegalArgumentException("etaViolation must be > 0, got " + etaViolation);
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

    public TokenParameters withEtaViolation(double eta) {
        return new TokenParameters(maxTokens, eta, etaIncrease, period, rateWindow, floor, klcMemory);
    }
}
