package io.dilu.trials;

import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.TrialReport;
import java.util.Optional;

/**
 * One trial as it went: what the workload reported, or why there is no report. A trial without a report does
 * not meet any SLO (infinite latency, no throughput), and its reason is kept to be shown.
 *
 * @param smPercent the SM share it was pinned to
 * @param batchSize the batch size it was given (1 for training)
 * @param report the workload's report; empty when the trial failed
 * @param failure why it failed, empty when it did not
 */
public record TrialRun(int smPercent, int batchSize, Optional<TrialReport> report, String failure) {

    public TrialRun {
        if (report.isPresent() == !failure.isEmpty()) {
            throw new IllegalArgumentException("a trial has either a report or a failure, got " + report + " and '" + failure + "'");
        }
    }

    public static TrialRun reported(int smPercent, int batchSize, TrialReport report) {
        return new TrialRun(smPercent, batchSize, Optional.of(report), "");
    }

    public static TrialRun failed(int smPercent, int batchSize, String failure) {
        return new TrialRun(smPercent, batchSize, Optional.empty(), failure.isBlank() ? "failed, no reason given" : failure);
    }

    /** What the searches compare: the report's, or an infinite latency for a failed trial. */
    public Measurement measurement() {
        return report.map(TrialReport::measurement).orElse(new Measurement(Double.POSITIVE_INFINITY, 0));
    }
}
