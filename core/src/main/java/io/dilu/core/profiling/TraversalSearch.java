package io.dilu.core.profiling;

import java.util.Optional;

/** The exhaustive baseline: every SM step times every power-of-two batch, the best TE that meets the SLO. */
public final class TraversalSearch implements InferenceSearch {

    private final int smStep;
    private final int maxBatch;

    /** 10 SM steps × batches 1..32: the 60 trials of the paper's Table 2. */
    public TraversalSearch() {
        this(10, 32);
    }

    public TraversalSearch(int smStep, int maxBatch) {
        if (smStep < 1 || maxBatch < 1) {
            throw new IllegalArgumentException("smStep and maxBatch must be at least 1");
        }
        this.smStep = smStep;
        this.maxBatch = maxBatch;
    }

    @Override
    public Optional<InferenceProfile> search(Trial trial, double sloMillis) {
        CountingTrial counting = new CountingTrial(trial);
        int bestSm = -1;
        int bestBatch = -1;
        double bestTe = -1;
        for (int sm = smStep; sm <= 100; sm += smStep) {
            for (int batch = 1; batch <= maxBatch; batch *= 2) {
                Measurement m = counting.run(sm, batch);
                double te = InferenceSearch.efficacy(batch, m.latencyMillis(), sm);
                if (m.latencyMillis() <= sloMillis / 2 && te > bestTe) {
                    bestTe = te;
                    bestSm = sm;
                    bestBatch = batch;
                }
            }
        }
        if (bestSm < 0) {
            return Optional.empty();
        }
        return Optional.of(InferenceSearch.profile(bestSm, bestBatch, counting));
    }
}
