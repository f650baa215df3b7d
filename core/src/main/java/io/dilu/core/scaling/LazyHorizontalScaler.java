package io.dilu.core.scaling;

/**
 * Lazy horizontal scaling: add instances only when load stays high, remove them only when it stays low,
 * so that bursts of a few seconds are absorbed by vertical scaling on the GPUs instead of cold starts.
 *
 * <p>Over a window of per-second request rates, with {@code n} instances each serving {@code c} requests
 * per second:
 * <ul>
 *   <li>scale out when at least φ_out samples exceed {@code n·c}, to {@code ⌈s/c⌉} where {@code s} is the
 *       φ_out-th largest sample: the level the load held for φ_out seconds, not its peak, so a spike inside
 *       a sustained rise is not provisioned for;
 *   <li>scale in when more than φ_in samples are below {@code (n−1)·c}, to the smallest count {@code m} for
 *       which that still holds of {@code m}: fewer than φ_out samples exceed {@code m·c}, so the next
 *       decision cannot scale straight back out;
 *   <li>to zero (if min scale allows) only after a whole window without a request;
 *   <li>from zero, any request activates one instance at once (or more if the rate asks);
 *   <li>otherwise hold.
 * </ul>
 * Because φ_out + φ_in exceeds the window, no window can ask for both directions: a constant load
 * settles on one count and stays there.
 */
public final class LazyHorizontalScaler {

    private final ScalingParameters params;

    public LazyHorizontalScaler(ScalingParameters params) {
        this.params = params;
    }

    public ScalingParameters parameters() {
        return params;
    }

    /**
     * @param samples per-second request rates of the window (any order, at most windowSeconds of them)
     * @param current instances running now
     * @param perInstanceRps requests per second one instance serves at its SM request (from its profile)
     */
    public ScaleDecision decide(double[] samples, int current, double perInstanceRps) {
        if (!(perInstanceRps > 0) || Double.isInfinite(perInstanceRps)) {
            throw new IllegalArgumentException("perInstanceRps must be finite and > 0, got " + perInstanceRps);
        }
        if (current < 0) {
            throw new IllegalArgumentException("current must be >= 0, got " + current);
        }
        double[] sorted = samples.clone();
        java.util.Arrays.sort(sorted); // ascending
        int n = sorted.length;

        if (current == 0) {
            if (n > 0 && sorted[n - 1] > 0) {
                int want = Math.max(1, instancesFor(sorted[n - 1], perInstanceRps));
                return bounded(want, ScaleDecision.Reason.ACTIVATE);
            }
            return bounded(0, ScaleDecision.Reason.HOLD);
        }

        if (n >= params.phiOut()) {
            double sustained = sorted[n - params.phiOut()]; // the phiOut-th largest
            if (sustained > current * perInstanceRps) {
                return bounded(Math.max(current + 1, instancesFor(sustained, perInstanceRps)),
                        ScaleDecision.Reason.SCALE_OUT);
            }
        }

        if (n == params.windowSeconds() && sorted[n - 1] == 0) {
            return bounded(0, ScaleDecision.Reason.SCALE_IN); // a whole window without a request
        }
        if (below(sorted, (current - 1) * perInstanceRps) > params.phiIn()) {
            int target = current - 1;
            while (target > 0 && below(sorted, (target - 1) * perInstanceRps) > params.phiIn()) {
                target--;
            }
            return bounded(target, ScaleDecision.Reason.SCALE_IN);
        }
        return bounded(current, ScaleDecision.Reason.HOLD);
    }

    private ScaleDecision bounded(int desired, ScaleDecision.Reason reason) {
        int clamped = Math.max(params.minScale(), Math.min(params.maxScale(), desired));
        return new ScaleDecision(clamped, clamped == desired ? reason : ScaleDecision.Reason.BOUNDS);
    }

    private static int instancesFor(double rps, double perInstanceRps) {
        return (int) Math.min(Integer.MAX_VALUE, Math.ceil(rps / perInstanceRps - 1e-9));
    }

    /** Samples strictly below {@code level}, in a sorted array. */
    private static int below(double[] sorted, double level) {
        int lo = 0;
        int hi = sorted.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (sorted[mid] < level) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
