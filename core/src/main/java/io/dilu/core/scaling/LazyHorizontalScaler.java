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
 *
 * <p>Beside it, the burst guard (this project's; neither the paper nor Dilu's public code has one): vertical
 * scaling can absorb a burst only up to what the instances serve at their SM limits, {@code n·L}. When the mean
 * rate of the latest {@code burstWindowSeconds} seconds is beyond that, waiting for φ_out seconds only builds a
 * queue that every later request waits behind, so it scales out at once, to {@code ⌈d/c⌉} instances at their
 * request rate {@code c} (leaving each its way to the limit for the next burst), for the level {@code d} the burst has
 * reached: the latest second's rate when it is above that mean. The mean, which acts, still holds the seconds before a
 * rising burst; sized by it, the scale-out is short by what the burst added since, and the queue that shortfall builds
 * is what its requests wait behind (issue 47's demo: the mean of 92 rps asked for 3 instances of a burst at 160).
 * Scale-in stays lazy: after a burst scale-out it also waits until φ_in + 1 seconds have passed since, the
 * evidence the lazy rule asks for gathered after the instances were added (the lazy scale-out needs no such wait:
 * it acts only with φ_out high samples in the window, which keep φ_in low ones out of it).
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
     * The lazy rule alone (no burst guard, whatever the parameters say).
     *
     * @param samples per-second request rates of the window (any order, at most windowSeconds of them)
     * @param current instances running now
     * @param perInstanceRps requests per second one instance serves at its SM request (from its profile)
     */
    public ScaleDecision decide(double[] samples, int current, double perInstanceRps) {
        return decide(samples, new double[0], current, perInstanceRps, Double.POSITIVE_INFINITY, Integer.MAX_VALUE);
    }

    /**
     * The lazy rule with the burst guard, when the parameters turn it on.
     *
     * @param samples per-second request rates of the window (any order, at most windowSeconds of them)
     * @param recent the rates of the latest {@code burstWindowSeconds} seconds that have one (a missed second is
     *     absent); the guard acts when at least half of them are there
     * @param current instances running now (or asked for: starting ones count, so a burst is provisioned once)
     * @param perInstanceRps requests per second one instance serves at its SM request (from its profile)
     * @param capacityAtLimit requests per second one instance serves at its SM limit, given the room its GPU
     *     leaves it: at least {@code perInstanceRps}; infinite for none (the guard never acts)
     * @param secondsSinceBurstOut seconds since the latest burst scale-out ({@link Integer#MAX_VALUE} for none)
     */
    public ScaleDecision decide(double[] samples, double[] recent, int current, double perInstanceRps,
            double capacityAtLimit, int secondsSinceBurstOut) {
        return decide(samples, recent, current, perInstanceRps, capacityAtLimit, secondsSinceBurstOut, 0);
    }

    /**
     * As {@link #decide(double[], double[], int, double, double, int)}, with {@code wakeable} parked instances that
     * serve again in about a second when woken, no cold start ({@link RevisionScaler}): for those, the latest second's
     * demand beyond what the serving instances take at their limits is evidence enough to scale out to, up to them.
     */
    public ScaleDecision decide(double[] samples, double[] recent, int current, double perInstanceRps,
            double capacityAtLimit, int secondsSinceBurstOut, int wakeable) {
        if (!(perInstanceRps > 0) || Double.isInfinite(perInstanceRps)) {
            throw new IllegalArgumentException("perInstanceRps must be finite and > 0, got " + perInstanceRps);
        }
        if (current < 0) {
            throw new IllegalArgumentException("current must be >= 0, got " + current);
        }
        if (!(capacityAtLimit >= perInstanceRps)) {
            throw new IllegalArgumentException("capacityAtLimit must be at least perInstanceRps (" + perInstanceRps
                    + "), got " + capacityAtLimit);
        }
        // Every test of the common path is a count over the window's few samples: no copy, no sort (the tick runs
        // for every revision every second); only a scale-out sorts, to read the level the load held.
        int n = samples.length;
        double peak = max(samples);

        if (current == 0) {
            if (n > 0 && peak > 0) {
                int want = Math.max(1, instancesFor(peak, perInstanceRps));
                return bounded(want, ScaleDecision.Reason.ACTIVATE);
            }
            return bounded(0, ScaleDecision.Reason.HOLD);
        }

        int burst = Math.max(burstTarget(recent, current, perInstanceRps, capacityAtLimit),
                wakeTarget(recent, current, perInstanceRps, capacityAtLimit, wakeable));
        // The phiOut-th largest sample exceeds n·c exactly when at least phiOut samples do.
        if (n >= params.phiOut() && above(samples, current * perInstanceRps) >= params.phiOut()) {
            double sustained = largest(samples, params.phiOut());
            int lazy = Math.max(current + 1, instancesFor(sustained, perInstanceRps));
            return burst > lazy ? bounded(burst, ScaleDecision.Reason.BURST_OUT)
                    : bounded(lazy, ScaleDecision.Reason.SCALE_OUT);
        }
        if (burst > current) {
            return bounded(burst, ScaleDecision.Reason.BURST_OUT);
        }

        if (n == params.windowSeconds() && peak == 0) {
            return bounded(0, ScaleDecision.Reason.SCALE_IN); // a whole window without a request
        }
        if (below(samples, (current - 1) * perInstanceRps) > params.phiIn() && secondsSinceBurstOut > params.phiIn()) {
            int target = current - 1;
            while (target > 0 && below(samples, (target - 1) * perInstanceRps) > params.phiIn()) {
                target--;
            }
            return bounded(target, ScaleDecision.Reason.SCALE_IN);
        }
        return bounded(current, ScaleDecision.Reason.HOLD);
    }

    /**
     * The instances the burst needs at the request rate, when the burst window's demand is beyond the limits; else 0:
     * for the level it has reached, the latest second's rate when that is above the window's mean.
     */
    private int burstTarget(double[] recent, int current, double perInstanceRps, double capacityAtLimit) {
        int window = params.burstWindowSeconds();
        if (window == 0 || Double.isInfinite(capacityAtLimit) || recent.length == 0 || 2 * recent.length < window) {
            return 0;
        }
        double sum = 0;
        for (double r : recent) {
            sum += r;
        }
        double demand = sum / recent.length;
        double reached = Math.max(demand, recent[recent.length - 1]);
        return demand > current * capacityAtLimit ? Math.max(current + 1, instancesFor(reached, perInstanceRps)) : 0;
    }

    /**
     * With instances parked, the instances the latest second's demand needs at the request rate, when it is beyond
     * the serving instances' limits, up to the parked ones; else 0. Waiting for the burst window's evidence guards
     * against a cold start that a short burst does not need; a wake costs no cold start, only the woken instances'
     * SM booking until the lazy rule parks them again.
     */
    private int wakeTarget(double[] recent, int current, double perInstanceRps, double capacityAtLimit, int wakeable) {
        if (wakeable == 0 || params.burstWindowSeconds() == 0 || Double.isInfinite(capacityAtLimit) || recent.length == 0) {
            return 0;
        }
        double latest = recent[recent.length - 1];
        return latest > current * capacityAtLimit
                ? Math.min(current + wakeable, Math.max(current + 1, instancesFor(latest, perInstanceRps))) : 0;
    }

    private ScaleDecision bounded(int desired, ScaleDecision.Reason reason) {
        int clamped = Math.max(params.minScale(), Math.min(params.maxScale(), desired));
        return new ScaleDecision(clamped, clamped == desired ? reason : ScaleDecision.Reason.BOUNDS);
    }

    private static int instancesFor(double rps, double perInstanceRps) {
        return (int) Math.min(Integer.MAX_VALUE, Math.ceil(rps / perInstanceRps - 1e-9));
    }

    private static double max(double[] samples) {
        double m = 0;
        for (double v : samples) {
            m = Math.max(m, v);
        }
        return m;
    }

    /** Samples strictly above {@code level}. */
    private static int above(double[] samples, double level) {
        int count = 0;
        for (double v : samples) {
            if (v > level) {
                count++;
            }
        }
        return count;
    }

    /** Samples strictly below {@code level}. */
    private static int below(double[] samples, double level) {
        int count = 0;
        for (double v : samples) {
            if (v < level) {
                count++;
            }
        }
        return count;
    }

    /** The {@code k}-th largest sample (1: the largest). */
    private static double largest(double[] samples, int k) {
        double[] sorted = samples.clone();
        java.util.Arrays.sort(sorted);
        return sorted[sorted.length - k];
    }
}
