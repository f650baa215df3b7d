package io.dilu.core.profiling;

/**
 * Binary search of a training function's SM request and limit (the paper, §3.2).
 *
 * <p>The throughput at 100% SM is the reference T1. For a target fraction p the search halves the SM
 * interval until a trial's throughput lies within {@code tolerance} of p·T1 (or the interval is one
 * percent wide, taking its upper end so the target is met). p = 0.8 gives the request, p = 1.0 the limit.
 *
 * <p>For the limit the band p·T1 ± 2% contains the whole plateau above the knee, so stopping at the first
 * trial inside it (as the paper does) could return any SM past the knee; there the search goes on to the
 * smallest SM within 2% of T1 — the marginal-effect point the limit is meant to be.
 */
public final class TrainingProfiler {

    private final double requestFraction;
    private final double tolerance;

    /** The paper's settings: request at 80% of exclusive throughput, 2% tolerance. */
    public TrainingProfiler() {
        this(0.8, 0.02);
    }

    public TrainingProfiler(double requestFraction, double tolerance) {
        if (!(requestFraction > 0 && requestFraction <= 1)) {
            throw new IllegalArgumentException("requestFraction must be in (0, 1], got " + requestFraction);
        }
        if (!(tolerance >= 0 && tolerance < requestFraction)) {
            throw new IllegalArgumentException("tolerance must be in [0, requestFraction), got " + tolerance);
        }
        this.requestFraction = requestFraction;
        this.tolerance = tolerance;
    }

    public TrainingProfile profile(Trial trial) {
        CountingTrial counting = new CountingTrial(trial);
        double exclusive = counting.run(100, 1).throughput();
        int request = search(counting, exclusive, requestFraction);
        int limit = Math.max(request, search(counting, exclusive, 1.0));
        // Both settings were trials of the searches (or the reference): the cache answers, no trial is added.
        return new TrainingProfile(request, limit, exclusive, counting.run(request, 1).throughput(),
                counting.run(limit, 1).throughput(), counting.trials());
    }

    private int search(Trial trial, double exclusive, double fraction) {
        double target = fraction * exclusive;
        double band = tolerance * exclusive;
        boolean plateau = fraction + tolerance >= 1.0;
        int low = 0; // zero SM means zero throughput: never measured
        int high = 100; // known to reach the target (it is the reference)
        while (high - low > 1) {
            int mid = (low + high) / 2;
            double t = trial.run(mid, 1).throughput();
            if (!plateau && Math.abs(t - target) <= band) {
                return mid;
            }
            if (t < (plateau ? target - band : target)) {
                low = mid;
            } else {
                high = mid;
            }
        }
        return high;
    }
}
