package io.dilu.autoscaler.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;

/**
 * The reference the autoscaler bench times today's decision against, in the same run: one function's decision as
 * it was when the decide tick met its bar (commit 3c9f48e, 1.8 ms per tick for 10,000 functions on 2026-11-22) —
 * that commit's {@code RateWindow}, {@code Autoscale.decide} and {@code LazyHorizontalScaler.decide}, names aside,
 * before the burst guard and the per-revision history. Kept here, frozen, so that a machine's speed and the code's
 * cost can be told apart (as the placement bench keeps the search before the workload affinity).
 */
final class PreBurstGuardDecision {

    private static final int WINDOW = 40;
    private static final int PHI_OUT = 20;
    private static final int PHI_IN = 30;

    private final double[] rates = new double[WINDOW];
    private final long[] seconds = new long[WINDOW];
    private Optional<Instant> zeroWantedSince = Optional.empty();
    private int desired;

    PreBurstGuardDecision(int desired) {
        this.desired = desired;
        Arrays.fill(seconds, Long.MIN_VALUE);
    }

    /** Records the tick's rate and decides, as the reconciler's tick did then (scale to zero off, as shipped). */
    int decide(Instant now, double rps, double perInstanceRps, int min, int max, Duration grace) {
        long second = now.getEpochSecond();
        int slot = (int) Math.floorMod(second, (long) WINDOW);
        seconds[slot] = second;
        rates[slot] = rps;
        int floor = Math.max(1, min);
        int d = lazy(samples(second), desired, perInstanceRps, floor, max);
        if (d > 0 || desired == 0) {
            zeroWantedSince = Optional.empty();
            desired = d;
            return d;
        }
        Instant since = zeroWantedSince.orElse(now);
        zeroWantedSince = Optional.of(since);
        desired = now.isBefore(since.plus(grace)) ? 1 : 0;
        return desired;
    }

    private double[] samples(long newest) {
        long oldest = newest - WINDOW + 1;
        int n = 0;
        for (long s : seconds) {
            if (s >= oldest && s <= newest) {
                n++;
            }
        }
        double[] out = new double[n];
        n = 0;
        for (int i = 0; i < WINDOW; i++) {
            if (seconds[i] >= oldest && seconds[i] <= newest) {
                out[n++] = rates[i];
            }
        }
        return out;
    }

    private static int lazy(double[] samples, int current, double perInstanceRps, int min, int max) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        if (current == 0) {
            return n > 0 && sorted[n - 1] > 0 ? bounded(Math.max(1, instancesFor(sorted[n - 1], perInstanceRps)), min, max)
                    : bounded(0, min, max);
        }
        if (n >= PHI_OUT) {
            double sustained = sorted[n - PHI_OUT];
            if (sustained > current * perInstanceRps) {
                return bounded(Math.max(current + 1, instancesFor(sustained, perInstanceRps)), min, max);
            }
        }
        if (n == WINDOW && sorted[n - 1] == 0) {
            return bounded(0, min, max);
        }
        if (below(sorted, (current - 1) * perInstanceRps) > PHI_IN) {
            int target = current - 1;
            while (target > 0 && below(sorted, (target - 1) * perInstanceRps) > PHI_IN) {
                target--;
            }
            return bounded(target, min, max);
        }
        return bounded(current, min, max);
    }

    private static int bounded(int desired, int min, int max) {
        return Math.max(min, Math.min(max, desired));
    }

    private static int instancesFor(double rps, double perInstanceRps) {
        return (int) Math.min(Integer.MAX_VALUE, Math.ceil(rps / perInstanceRps - 1e-9));
    }

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
