package io.dilu.core.profiling;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ProfilingTest {

    /** Throughput saturating with SM share: T(s) = T1 · min(1, s/knee)^0.7. */
    private static Trial training(double t1, int knee) {
        return (sm, batch) -> new Measurement(1000.0 / t1, t1 * Math.pow(Math.min(1.0, (double) sm / knee), 0.7));
    }

    /** Smallest SM percent whose throughput reaches the fraction, by exhaustive scan. */
    private static int exact(Trial trial, double fraction) {
        double t1 = trial.run(100, 1).throughput();
        for (int sm = 1; sm <= 100; sm++) {
            if (trial.run(sm, 1).throughput() >= fraction * t1) {
                return sm;
            }
        }
        return 100;
    }

    @ParameterizedTest(name = "knee at {0}%")
    @CsvSource({"30", "50", "70", "90", "100"})
    void trainingSearchFindsRequestAndLimitWithinTolerance(int knee) {
        Trial trial = training(500, knee);
        TrainingProfile p = new TrainingProfiler().profile(trial);

        // Within the 2% throughput band of the target: throughput at the answer is 78%..82% of exclusive.
        double atRequest = trial.run(p.smRequest(), 1).throughput() / p.exclusiveThroughput();
        assertThat(atRequest).isBetween(0.78, 0.82 + 1e-9);
        assertThat(trial.run(p.smLimit(), 1).throughput() / p.exclusiveThroughput()).isGreaterThanOrEqualTo(0.98);
        assertThat(p.smLimit()).isGreaterThanOrEqualTo(p.smRequest()).isLessThanOrEqualTo(exact(trial, 1.0));
        assertThat(p.smRequest()).isCloseTo(exact(trial, 0.8), org.assertj.core.data.Offset.offset(3));
        assertThat(p.trials()).isLessThanOrEqualTo(15); // 1 reference + at most 7 halvings per target
        // The throughput at either setting is a trial the searches ran: reading it adds none.
        CountingTrial counting = new CountingTrial(trial);
        TrainingProfile again = new TrainingProfiler().profile(counting);
        assertThat(counting.trials()).isEqualTo(again.trials());
        assertThat(again.requestThroughput()).isEqualTo(trial.run(p.smRequest(), 1).throughput());
        assertThat(again.limitThroughput()).isEqualTo(trial.run(p.smLimit(), 1).throughput());
    }

    /**
     * An inference model: a batch needs {@code work} ms of a whole GPU per item plus a fixed part, and a
     * batch of b cannot use more than {@code 15·b}% of the SMs (small batches do not fill the GPU).
     */
    private static Trial inference(double fixedMs, double perItemMs) {
        return (sm, batch) -> {
            double usable = Math.min(sm, Math.min(100, 15.0 * batch)) / 100.0;
            double latency = fixedMs + perItemMs * batch / usable;
            return new Measurement(latency, batch / (latency / 1000));
        };
    }

    @ParameterizedTest(name = "fixed={0}ms perItem={1}ms slo={2}ms")
    @CsvSource({"2, 1.0, 100", "5, 2.0, 200", "1, 0.5, 50", "3, 4.0, 400", "2, 1.5, 60"})
    void hybridGrowthSearchIsNearTheTraversalOptimumInFarFewerTrials(double fixed, double perItem, double slo) {
        Trial model = inference(fixed, perItem);
        InferenceProfile hgs = new HybridGrowthSearch().search(model, slo).orElseThrow();
        InferenceProfile traversal = new TraversalSearch().search(model, slo).orElseThrow();

        assertThat(traversal.trials()).isEqualTo(60);
        assertThat(hgs.trials()).isLessThanOrEqualTo(12);
        assertThat(hgs.throughputEfficacy()).isGreaterThanOrEqualTo(0.95 * traversal.throughputEfficacy());
        assertThat(model.run(hgs.smRequest(), hgs.batchSize()).latencyMillis()).isLessThanOrEqualTo(slo / 2);
        assertThat(hgs.smLimit()).isEqualTo(Math.min(100, 2 * hgs.smRequest()));
        assertThat(hgs.servingThroughput()).isGreaterThan(0);
    }

    @Test
    void theRateAtTheLimitIsOneMoreTrialAtTheLimitAndTheSameBatch() {
        Trial model = inference(2, 1);
        CountingTrial asked = new CountingTrial(model);
        InferenceProfile p = new HybridGrowthSearch().search(asked, 100).orElseThrow();
        Measurement atLimit = model.run(p.smLimit(), p.batchSize());
        assertThat(p.servingThroughputAtLimit()).isEqualTo(p.batchSize() / (atLimit.latencyMillis() / 1000))
                .isGreaterThan(p.servingThroughput());
        assertThat(p.trials()).as("every distinct setting run, the limit's included").isEqualTo(asked.trials());
    }

    @Test
    void theTraversalHasAlreadyRunTheLimitSoItCostsNoTrial() {
        InferenceProfile p = new TraversalSearch().search(inference(2, 1), 100).orElseThrow();
        assertThat(p.trials()).isEqualTo(60);
        assertThat(p.servingThroughputAtLimit()).isGreaterThanOrEqualTo(p.servingThroughput());
    }

    @Test
    void aFailedTrialAtTheLimitLeavesItsRateUnknownAndASlowerOneReadsAsTheRequestsRate() {
        Trial base = inference(2, 1);
        int request = new HybridGrowthSearch().search(base, 100).orElseThrow().smRequest();
        int limit = Math.min(100, 2 * request);
        Trial failsAtLimit = (sm, b) -> sm == limit && sm != request ? new Measurement(Double.POSITIVE_INFINITY, 0) : base.run(sm, b);
        assertThat(new HybridGrowthSearch().search(failsAtLimit, 100).orElseThrow().servingThroughputAtLimit()).isNaN();
        // Noise: the limit measured slower than the request. A larger share never serves less.
        Trial slowerAtLimit = (sm, b) -> sm == limit && sm != request ? new Measurement(1000, b) : base.run(sm, b);
        InferenceProfile p = new HybridGrowthSearch().search(slowerAtLimit, 100).orElseThrow();
        assertThat(p.servingThroughputAtLimit()).isEqualTo(p.servingThroughput());
    }

    @Test
    void anSloNoSettingMeetsGivesNoProfile() {
        Trial slow = inference(50, 10);
        assertThat(new HybridGrowthSearch().search(slow, 40)).isEmpty();
        assertThat(new TraversalSearch().search(slow, 40)).isEmpty();
    }

    @Test
    void countingTrialNeverRunsASettingTwice() {
        int[] runs = {0};
        CountingTrial counting = new CountingTrial((sm, b) -> {
            runs[0]++;
            return new Measurement(1, 1);
        });
        counting.run(10, 1);
        counting.run(10, 1);
        counting.run(20, 1);
        assertThat(runs[0]).isEqualTo(2);
        assertThat(counting.trials()).isEqualTo(2);
    }

    @Test
    void searchesReportTheSettingTheyChose() {
        Optional<InferenceProfile> p = new HybridGrowthSearch().search(inference(2, 1), 100);
        assertThat(p).hasValueSatisfying(v -> {
            assertThat(v.smRequest()).isBetween(10, 100);
            assertThat(Integer.bitCount(v.batchSize())).isEqualTo(1);
        });
    }
}
