package io.dilu.core.profiling;

import io.dilu.core.quota.Quota;
import java.util.Optional;

/** A way of finding an inference function's &lt;SM, batch&gt; setting; compared by trials and result. */
public sealed interface InferenceSearch permits HybridGrowthSearch, TraversalSearch {

    /**
     * @param sloMillis the end-to-end latency objective; a setting meets it when one batch executes in at
     *     most half of it (t_exec = SLO/2, leaving the rest for queueing, batching and transfers)
     * @return the chosen setting, or empty when no setting meets the SLO
     */
    Optional<InferenceProfile> search(Trial trial, double sloMillis);

    /** Throughput efficacy TE = IBS / (t_exec · SMR), in requests per second per SM percent. */
    static double efficacy(int batchSize, double latencyMillis, int smPercent) {
        return batchSize / (latencyMillis / 1000.0 * smPercent);
    }

    /**
     * The profile of the chosen setting, with the serving rate at its limit measured in the same run of trials: one
     * trial at {@code <limit, batch>}, free when the search already ran that setting ({@code trials} caches).
     */
    static InferenceProfile profile(int sm, int batch, CountingTrial trials) {
        int limit = Quota.defaultLimit(sm);
        Measurement m = trials.run(sm, batch);
        double atRequest = batch / (m.latencyMillis() / 1000.0);
        double atLimitMillis = trials.run(limit, batch).latencyMillis();
        double atLimit = Double.isFinite(atLimitMillis) ? Math.max(atRequest, batch / (atLimitMillis / 1000.0)) : Double.NaN;
        return new InferenceProfile(sm, limit, batch, efficacy(batch, m.latencyMillis(), sm), atRequest, atLimit,
                trials.trials());
    }
}
