package io.dilu.trials;

import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.Trial;

/** A {@link Trial} that also says what each run reported, or why it failed. */
@FunctionalInterface
public interface ReportingTrial extends Trial {

    /** Runs the function once at this setting; never throws for a failed trial, returns it. */
    TrialRun attempt(int smPercent, int batchSize);

    @Override
    default Measurement run(int smPercent, int batchSize) {
        return attempt(smPercent, batchSize).measurement();
    }
}
