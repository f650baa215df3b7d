package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.profiling.HybridGrowthSearch;
import io.dilu.core.profiling.InferenceProfile;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.trials.EmulatedModel;
import io.dilu.trials.ProfileFile;
import io.dilu.trials.ReportingTrial;
import io.dilu.trials.TrialRun;

/**
 * Holds a profile shipped with the simulator (coscaling/profiles/NAME.yaml, written by {@code ./dilu profile --local
 * --model NAME --out DIR}) to what the profiler finds now, re-profiling the model with the given trials.
 *
 * <p>Equally efficient settings are told apart by the float rounding of event times (docs/profiler.md), so the
 * search may now choose another batch of the same efficacy than the one shipped (BERT-Large: batches 1, 2 and 4 at
 * SM 10 tie). What must hold: the same SM request and limit; the efficacy of today's choice within {@code tolerance}
 * of the shipped one's; and at the shipped request, limit and batch, measured again, the rates within {@code
 * tolerance} of the shipped ones and the same memory.
 */
final class ShippedProfiles {

    private ShippedProfiles() {}

    /** Re-profiles {@code model} with {@code trials} and checks the shipped file against it; returns today's choice. */
    static InferenceProfile assertStillFound(EmulatedModel model, ReportingTrial trials, double tolerance) throws Exception {
        ProfileFile.Read read = ProfileFile.read(FunctionProfiles.shippedText(model.name()), model.name() + ".yaml");
        ProfileStatus shipped = read.profile().getStatus();
        assertThat(read.profile().getSpec()).as("the spec the local cluster profiles from").isEqualTo(model.profileSpec());
        InferenceProfile now = new HybridGrowthSearch().search(trials, model.sloSeconds() * 1000).orElseThrow();

        assertThat(now.smRequest()).as("SM request").isEqualTo(shipped.smRequest());
        assertThat(now.smLimit()).as("SM limit").isEqualTo(shipped.smLimit());
        double shippedTe = shipped.servingThroughputRps() / shipped.smRequest();
        assertThat(now.throughputEfficacy()).as("TE of the choice, requests/s per SM percent")
                .isCloseTo(shippedTe, org.assertj.core.data.Percentage.withPercentage(100 * tolerance));

        int batch = shipped.batchSize();
        TrialRun atRequest = trials.attempt(shipped.smRequest(), batch);
        TrialRun atLimit = trials.attempt(shipped.smLimit(), batch);
        double rpsAtRequest = batch / (atRequest.measurement().latencyMillis() / 1000);
        double rpsAtLimit = Math.max(rpsAtRequest, batch / (atLimit.measurement().latencyMillis() / 1000));
        assertThat(rpsAtRequest).as("rps at the request, batch %d", batch)
                .isCloseTo(shipped.servingThroughputRps(), org.assertj.core.data.Percentage.withPercentage(100 * tolerance));
        assertThat(rpsAtLimit).as("rps at the limit, batch %d", batch)
                .isCloseTo(shipped.servingThroughputRpsAtLimit(), org.assertj.core.data.Percentage.withPercentage(100 * tolerance));
        assertThat(atRequest.report().orElseThrow().memoryMib()).as("memory").isEqualTo(shipped.memoryMiB());
        return now;
    }
}
