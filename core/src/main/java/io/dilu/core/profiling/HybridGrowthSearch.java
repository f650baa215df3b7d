package io.dilu.core.profiling;

import java.util.Optional;

/**
 * The paper's Hybrid Growth Search for inference (§3.2), with a stopping rule that keeps the best setting.
 *
 * <p><b>Growth (the paper's).</b> From SM {@code smStart} and batch 1: when a trial meets the SLO (one batch
 * executes within t_exec = SLO/2, as INFless and the paper use) the batch doubles; when it does not, the SM
 * share grows by a fixed step (10 points). The path is a staircase along the edge of the SLO-meeting region:
 * at every SM it visits it tries the largest batch that still meets the SLO, which is that SM's most efficient
 * batch as long as throughput does not fall with batch size. Points below the staircase (a smaller batch at a
 * larger SM) are skipped because at a fixed batch TE = batch / (latency × SM) falls with SM whenever the
 * speed-up from more SMs is sublinear, as it is on a GPU.
 *
 * <p><b>Result.</b> The most efficient SLO-meeting trial seen on the whole path (ties keep the earlier, smaller
 * setting), not the last one; then one trial at its limit and batch ({@link InferenceSearch#profile}), unless the
 * path already ran it, for the rate an instance serves when vertical scaling gives it its limit.
 *
 * <p><b>Stopping rule.</b> The search stops (1) after {@value #PATIENCE} trials without progress since the
 * last clear gain, once one SLO-meeting setting is known (a trial over the budget, or an SLO-meeting trial
 * whose TE is more than 1% below the best; a TE within 1% is flat and counts neither way, a gain of more
 * than 1% resets the count), (2) when an SLO-meeting trial is at the batch bound, or (3) when the SM
 * share would pass 100. Rule 1 replaces the earlier "stop at the first TE that does not rise", which on
 * measured tables gives up at a dip (a noisy point, a flat stretch, a batch past a small share's sweet spot)
 * just before a better setting; two such trials are tolerated and a plateau is walked through. Failed trials count too because past
 * the peak the staircase mostly climbs SM at a batch the budget refuses: each failed step at share s bounds
 * every later setting of that batch below batch / (t_exec × s), falling as s grows, so three trials without
 * progress end the walk instead of climbing to SM 100. Rule 2 holds because past the batch bound only the SM
 * share can grow, and at a fixed batch that lowers TE (sublinear speed-up, above). The price: an optimum
 * behind three or more failed SM steps (a batch that fits only far up the SM axis) is missed, and the search
 * keeps the best setting before them. A table point that a trial cannot measure is the caller's to report as
 * not meeting the SLO (infinite latency); the search counts it like any failed trial.
 */
public final class HybridGrowthSearch implements InferenceSearch {

    /** Trials in a row without a better TE, once one setting meets the SLO, after which the search stops. */
    public static final int PATIENCE = 3;
    /** TE within this fraction of the best is flat: it neither counts against the search nor resets the count. */
    public static final double FLAT = 0.01;

    /**
     * Where the search starts and how it grows.
     *
     * @param smStart the first SM share, percent (1..100)
     * @param smStep how far the SM share grows when a trial misses the SLO, percent points (at least 1)
     * @param maxBatch the largest batch tried (at least 1)
     */
    public record Steps(int smStart, int smStep, int maxBatch) {

        /** The paper's: SM from 10% in steps of 10, batch up to 32. */
        public static final Steps PAPER = new Steps(10, 10, 32);

        public Steps {
            if (smStart < 1 || smStart > 100 || smStep < 1 || maxBatch < 1) {
                throw new IllegalArgumentException("smStart must be in 1..100, smStep and maxBatch at least 1");
            }
        }

        public Steps withMaxBatch(int batches) {
            return new Steps(smStart, smStep, batches);
        }
    }

    private final int smStart;
    private final int smStep;
    private final int maxBatch;

    public HybridGrowthSearch() {
        this(Steps.PAPER);
    }

    public HybridGrowthSearch(Steps steps) {
        this.smStart = steps.smStart();
        this.smStep = steps.smStep();
        this.maxBatch = steps.maxBatch();
    }

    @Override
    public Optional<InferenceProfile> search(Trial trial, double sloMillis) {
        CountingTrial counting = new CountingTrial(trial);
        double execBudget = sloMillis / 2;
        int sm = smStart;
        int batch = 1;
        int bestSm = -1;
        int bestBatch = -1;
        double bestTe = -1;
        int stale = 0;
        while (sm <= 100) {
            Measurement m = counting.run(sm, batch);
            if (m.latencyMillis() <= execBudget) {
                double te = InferenceSearch.efficacy(batch, m.latencyMillis(), sm);
                if (te > bestTe) {
                    if (te > (1 + FLAT) * bestTe) {
                        stale = 0;
                    }
                    bestTe = te;
                    bestSm = sm;
                    bestBatch = batch;
                } else if (te < (1 - FLAT) * bestTe && ++stale >= PATIENCE) {
                    break; // past the peak along the SLO edge
                }
                if (batch * 2 > maxBatch) {
                    break; // only SM could grow now, and at a fixed batch that lowers TE
                }
                batch *= 2;
            } else {
                if (bestSm >= 0 && ++stale >= PATIENCE) {
                    break; // past the peak: only ever larger shares at batches the budget refuses
                }
                sm += smStep;
            }
        }
        if (bestSm < 0) {
            return Optional.empty();
        }
        return Optional.of(InferenceSearch.profile(bestSm, bestBatch, counting));
    }
}
