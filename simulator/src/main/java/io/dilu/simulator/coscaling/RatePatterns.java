package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;
import java.util.SplittableRandom;

/**
 * Seeded request-rate patterns for the co-scaling simulator, after the three classes of Azure Functions
 * traces that INFless and the Dilu paper evaluate on (§5: bursty, periodic, sporadic; Shahrad et al.,
 * "Serverless in the Wild", ATC'20). The shapes, not the exact traces, are reproduced; every constant is
 * here so a figure can be traced back to it.
 */
public final class RatePatterns {

    /** Bursty: mean gap between bursts (s), burst length (s) and height (× the base rate). */
    static final double BURST_GAP_S = 120;
    static final int BURST_MIN_S = 5;
    static final int BURST_MAX_S = 20;
    static final double BURST_MIN_X = 4;
    static final double BURST_MAX_X = 8;
    /** Periodic: period (s) and amplitude (share of the mean). */
    static final int PERIOD_S = 600;
    static final double AMPLITUDE = 0.8;
    /** Sporadic: mean gap between active spells (s) and their length (s). */
    static final double SPELL_GAP_S = 180;
    static final int SPELL_MIN_S = 10;
    static final int SPELL_MAX_S = 40;
    /** Second-to-second noise on every pattern: ± this share. */
    static final double NOISE = 0.1;

    private RatePatterns() {}

    /** A steady base rate with bursts of 5–20 s at 4–8× it, starting on average every 2 minutes. */
    public static RateTrace bursty(int seconds, double baseRps, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] rps = new double[seconds];
        int burstLeft = 0;
        double height = 1;
        for (int t = 0; t < seconds; t++) {
            if (burstLeft == 0 && random.nextDouble() < 1 / BURST_GAP_S) {
                burstLeft = random.nextInt(BURST_MIN_S, BURST_MAX_S + 1);
                height = BURST_MIN_X + random.nextDouble() * (BURST_MAX_X - BURST_MIN_X);
            }
            double level = burstLeft > 0 ? baseRps * height : baseRps;
            burstLeft = Math.max(0, burstLeft - 1);
            rps[t] = noisy(level, random);
        }
        return new RateTrace("bursty", rps);
    }

    /** A rate swinging ±80% around its mean with a 10-minute period. */
    public static RateTrace periodic(int seconds, double meanRps, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] rps = new double[seconds];
        for (int t = 0; t < seconds; t++) {
            rps[t] = noisy(meanRps * (1 + AMPLITUDE * Math.sin(2 * Math.PI * t / PERIOD_S)), random);
        }
        return new RateTrace("periodic", rps);
    }

    /** Nothing most of the time; spells of 10–40 s at about {@code activeRps}, starting on average every 3 minutes. */
    public static RateTrace sporadic(int seconds, double activeRps, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] rps = new double[seconds];
        int spellLeft = 0;
        for (int t = 0; t < seconds; t++) {
            if (spellLeft == 0 && random.nextDouble() < 1 / SPELL_GAP_S) {
                spellLeft = random.nextInt(SPELL_MIN_S, SPELL_MAX_S + 1);
            }
            rps[t] = spellLeft > 0 ? noisy(activeRps, random) : 0;
            spellLeft = Math.max(0, spellLeft - 1);
        }
        return new RateTrace("sporadic", rps);
    }

    private static double noisy(double level, SplittableRandom random) {
        return Math.max(0, level * (1 + NOISE * (2 * random.nextDouble() - 1)));
    }
}
