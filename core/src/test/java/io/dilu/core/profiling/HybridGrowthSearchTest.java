package io.dilu.core.profiling;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleBiFunction;
import org.junit.jupiter.api.Test;

/**
 * The search on measured-table shapes whose optimum is known: the grid SM 10..100 × batch 1..32 that a
 * traversal measures (60 trials), the best SLO-meeting TE of each table written out by hand.
 */
class HybridGrowthSearchTest {

    private static final int[] BATCHES = {1, 2, 4, 8, 16, 32};

    /** A table of latencies (ms) over the traversal's grid that records the order of the settings asked. */
    private static final class Table implements Trial {
        final ToDoubleBiFunction<Integer, Integer> latency;
        final List<String> asked = new ArrayList<>();

        Table(ToDoubleBiFunction<Integer, Integer> latency) {
            this.latency = latency;
        }

        @Override
        public Measurement run(int sm, int batch) {
            asked.add(sm + "/" + batch);
            double ms = latency.applyAsDouble(sm, batch);
            return new Measurement(ms, batch / (ms / 1000));
        }

        /** The best TE among settings meeting the budget, over the whole grid. */
        double bestTe(double sloMillis) {
            double best = -1;
            for (int sm = 10; sm <= 100; sm += 10) {
                for (int b : BATCHES) {
                    double ms = latency.applyAsDouble(sm, b);
                    if (ms <= sloMillis / 2) {
                        best = Math.max(best, InferenceSearch.efficacy(b, ms, sm));
                    }
                }
            }
            return best;
        }
    }

    /** Latency from a TE: ms = 1000 · batch / (g(batch) · h(sm) · sm), h falling 0.3% per SM point (sublinear). */
    private static Table byEfficacy(Map<Integer, Double> g) {
        return new Table((sm, b) -> 1000.0 * b / (g.get(b) * (1 - 0.003 * (sm - 10)) * sm));
    }

    /** Amdahl over SMs (serial share 10%) and superlinear batch cost: TE peaks inside the grid. */
    private static Table convex() {
        return new Table((sm, b) -> 2 * (2 + Math.pow(b, 1.3)) * (0.1 + 0.9 * 100.0 / sm));
    }

    /** {@code searchTrials}: the staircase's, within the paper's 6–9; then one more at the limit, not on these paths. */
    private static void assertFindsTheBest(Table table, double slo, int sm, int batch, int searchTrials) {
        InferenceProfile p = new HybridGrowthSearch().search(table, slo).orElseThrow();
        assertThat(p.throughputEfficacy()).isCloseTo(table.bestTe(slo), org.assertj.core.data.Offset.offset(1e-9));
        assertThat(p.smRequest()).isEqualTo(sm);
        assertThat(p.batchSize()).isEqualTo(batch);
        assertThat(searchTrials).isLessThanOrEqualTo(9);
        assertThat(p.trials()).isEqualTo(searchTrials + 1);
        assertThat(table.asked.getLast()).as("the last trial is at the limit").isEqualTo(p.smLimit() + "/" + batch);
        double limitMs = table.latency.applyAsDouble(p.smLimit(), batch);
        assertThat(p.servingThroughputAtLimit()).isEqualTo(batch / (limitMs / 1000));
        assertThat(table.latency.applyAsDouble(sm, batch)).isLessThanOrEqualTo(slo / 2);
    }

    @Test
    void convexSurfaceItsPeakInEightTrials() {
        Table t = convex();
        assertFindsTheBest(t, 100, 30, 4, 8);
        // The staircase: batch doubles while the 50 ms budget holds, SM steps by 10 when it does not, and
        // three trials without progress after the peak end it; then the choice's limit, SM 60, at its batch.
        assertThat(t.asked).containsExactly("10/1", "20/1", "20/2", "20/4", "30/4", "30/8", "40/8", "50/8", "60/4");
    }

    @Test
    void flatRegionIsWalkedThroughToTheRiseBehindIt() {
        // TE equal for batches 1, 2, 4 at SM 10: the old rule stopped at the second trial and chose 10/1 (TE 1.0).
        Table t = byEfficacy(Map.of(1, 1.0, 2, 1.0, 4, 1.0, 8, 1.2, 16, 1.1, 32, 1.0));
        assertFindsTheBest(t, 800, 20, 8, 8);
    }

    @Test
    void nonMonotoneDipIsNotMistakenForThePeak() {
        // Batch 2 is worse than batch 1, batch 4 better than both: the old rule gave up at 10/2 and chose 10/1.
        Table t = byEfficacy(Map.of(1, 1.0, 2, 0.9, 4, 1.3, 8, 1.0, 16, 0.9, 32, 0.8));
        assertFindsTheBest(t, 500, 20, 4, 7);
    }

    @Test
    void theTraversalNeedsSixtyTrialsForTheSameAnswers() {
        Table t = convex();
        InferenceProfile all = new TraversalSearch().search(t, 100).orElseThrow();
        assertThat(all.trials()).isEqualTo(60);
        assertThat(all.throughputEfficacy()).isEqualTo(new HybridGrowthSearch().search(convex(), 100).orElseThrow()
                .throughputEfficacy());
    }

    @Test
    void aPointATableLacksIsAFailedTrialAndTheSearchGoesOn() {
        // 20/1 unmeasured (infinite latency): the search steps to 30/1 instead, and it is one of the trials.
        Table t = new Table((sm, b) -> sm == 20 && b == 1 ? Double.POSITIVE_INFINITY
                : 2 * (2 + Math.pow(b, 1.3)) * (0.1 + 0.9 * 100.0 / sm));
        InferenceProfile p = new HybridGrowthSearch().search(t, 100).orElseThrow();
        assertThat(t.asked).startsWith("10/1", "20/1", "30/1");
        assertThat(p.smRequest()).isEqualTo(30);
        assertThat(p.batchSize()).isEqualTo(4);
    }

    @Test
    void theBatchBoundEndsTheSearch() {
        // Everything meets a generous SLO and TE grows with batch: 10/1 .. 10/32, then stop (SM would only lower TE).
        Table t = new Table((sm, b) -> (5 + b) * 100.0 / sm);
        InferenceProfile p = new HybridGrowthSearch().search(t, 10_000).orElseThrow();
        assertThat(p.trials()).isEqualTo(6 + 1); // and 20/32, the limit
        assertThat(p.smRequest()).isEqualTo(10);
        assertThat(p.batchSize()).isEqualTo(32);
    }

    @Test
    void anOptimumBehindThreeFailedSmStepsIsMissedTheKnownPriceOfTheRule() {
        // Batch 8 fits the 20 ms budget only at SM 90; after 60/4 the search fails 60/8, 70/8, 80/8 and stops.
        Table t = new Table((sm, b) -> (8 + Math.pow(b, 1.1)) * (0.15 + 0.85 * 100.0 / sm));
        InferenceProfile p = new HybridGrowthSearch().search(t, 40).orElseThrow();
        assertThat(p.smRequest()).isEqualTo(60);
        assertThat(p.batchSize()).isEqualTo(4);
        assertThat(p.trials()).isEqualTo(11 + 1); // and 100/4, the limit
        assertThat(p.throughputEfficacy() / t.bestTe(40)).isBetween(0.74, 0.75);
    }
}
