package io.dilu.core.profiling;

import java.util.Optional;

/**
 * The paper's Hybrid Growth Search for inference (§3.2): batch size doubles while the SLO holds, the SM
 * share grows by a fixed step when it does not, and the search stops once throughput efficacy falls
 * (TE is convex over &lt;batch, SM&gt;, so a fall means the peak is behind) or a bound is reached.
 */
public final class HybridGrowthSearch implements InferenceSearch {

    private final int smStart;
    private final int smStep;
    private final int maxBatch;

    /** The paper's settings: SM from 10% in steps of 10, batch up to 32. */
    public HybridGrowthSearch() {
        this(10, 10, 32);
    }

    public HybridGrowthSearch(int smStart, int smStep, int maxBatch) {
        if (smStart < 1 || smStart > 100 || smStep < 1 || maxBatch < 1) {
            throw new IllegalArgumentException("smStart must be in 1..100, smStep and maxBatch at least 1");
        }
        this.smStart = smStart;
        this.smStep = smStep;
        this.maxBatch = maxBatch;
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
        while (sm <= 100) {
            Measurement m = counting.run(sm, batch);
            if (m.latencyMillis() <= execBudget) {
                double te = InferenceSearch.efficacy(batch, m.latencyMillis(), sm);
                if (te <= bestTe) {
                    break; // past the peak of the convex surface
                }
                bestTe = te;
                bestSm = sm;
                bestBatch = batch;
                if (batch * 2 > maxBatch) {
                    break;
                }
                batch *= 2;
            } else {
                sm += smStep;
            }
        }
        if (bestSm < 0) {
            return Optional.empty();
        }
        return Optional.of(InferenceSearch.profile(bestSm, bestBatch, counting.run(bestSm, bestBatch), counting.trials()));
    }
}
