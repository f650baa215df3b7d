package io.dilu.loadgen;

import java.io.IOException;
import java.io.Writer;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Every request of a load run, in the order they were due.
 *
 * @param trace the trace's name
 */
public record LoadResult(String trace, List<RequestRecord> requests) {

    public static final String CSV_HEADER = "second,offset_s,latency_s,status";

    public LoadResult {
        requests = List.copyOf(requests);
    }

    public int count() {
        return requests.size();
    }

    /** Requests not answered with a 2xx: every {@link Outcome.Failed} and every other status. */
    public long failures() {
        return requests.stream().filter(r -> !r.outcome().ok()).count();
    }

    public long failures(Outcome.Failure failure) {
        return requests.stream().filter(r -> r.outcome() instanceof Outcome.Failed f && f.failure() == failure).count();
    }

    /** Requests answered with a status other than 2xx. */
    public long errorStatuses() {
        return requests.stream().filter(r -> r.outcome() instanceof Outcome.Answered && !r.outcome().ok()).count();
    }

    /** The q-quantile (nearest rank) of the 2xx answers' latencies in seconds; NaN when there is none. */
    public double latencyPercentile(double q) {
        return percentile(requests.stream().filter(r -> r.outcome().ok())
                .mapToDouble(r -> ((Outcome.Answered) r.outcome()).latencySeconds()).sorted().toArray(), q);
    }

    /**
     * The share of requests that missed an SLO of {@code sloSeconds}: answered with a 2xx later than it, or not
     * answered with a 2xx at all (a failure, or a request still open when the run was stopped); 0 for no requests.
     */
    public double sloViolationRate(double sloSeconds) {
        if (requests.isEmpty()) {
            return 0;
        }
        long violations = requests.stream().filter(r -> !r.outcome().ok()
                || ((Outcome.Answered) r.outcome()).latencySeconds() > sloSeconds).count();
        return (double) violations / requests.size();
    }

    /** {@value #CSV_HEADER}: latency empty for a failure, status the HTTP status or the failure's name. */
    public void writeCsv(Writer out) throws IOException {
        out.write(CSV_HEADER + "\n");
        for (RequestRecord r : requests) {
            String row = switch (r.outcome()) {
                case Outcome.Answered a -> String.format(Locale.ROOT, "%d,%.6f,%.6f,%d", r.second(), r.offsetSeconds(),
                        a.latencySeconds(), a.status());
                case Outcome.Failed f -> String.format(Locale.ROOT, "%d,%.6f,,%s", r.second(), r.offsetSeconds(),
                        f.failure().name().toLowerCase(Locale.ROOT));
            };
            out.write(row + "\n");
        }
    }

    static double percentile(double[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        return sorted[Math.clamp((long) Math.ceil(sorted.length * q) - 1, 0, sorted.length - 1)];
    }

    static double percentileOfUnsorted(double[] values, double q) {
        Arrays.sort(values);
        return percentile(values, q);
    }
}
