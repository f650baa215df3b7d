package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.RevisionScaler;

/**
 * How a serving system scales one function, as the co-scaling simulator drives it: once a second it sees the
 * request rates so far and its instances, and says how many it wants serving and parked, how fast each serves and
 * what each books of a GPU.
 */
public sealed interface CoScalingPolicy permits DiluPolicy, KpaPolicy, CoScalingPolicy.AtRequest {

    String name();

    /**
     * Instances wanted, from the rates of seconds 0..now (inclusive) and the instances there: serving ones (ready,
     * starting or waking) and parked ones (Dilu's: kept at their memory alone, {@link RevisionScaler}).
     */
    RevisionScaler.Decision decide(double[] rates, int now, int ready, int starting, int parked);

    /** Requests per second {@code ready} instances serve together when {@code demand} wait to be served. */
    double serviceRate(int ready, double demand);

    /**
     * The same when their GPUs let them take only {@code granted} (0..1) of the range between their SM request and
     * their limit, as the token manager divides a GPU whose instances want more than it has ({@link CoScalingFleet}):
     * a static share has no such range, so it serves as {@link #serviceRate(int, double)} says.
     */
    default double serviceRate(int ready, double demand, double granted) {
        return serviceRate(ready, demand);
    }

    /** Share of a GPU each instance books while it exists (starting or ready): what placement reserves for it. */
    double bookedShare();

    /**
     * Share of a GPU each instance may grow to, as placement books it beside {@link #bookedShare()} (Algorithm 1's
     * Σlimit ≤ γ): the booked share itself for a static one.
     */
    default double bookedLimit() {
        return bookedShare();
    }

    /**
     * Share of a GPU each of {@code ready} instances holds in a second when {@code demand} requests wait to be
     * served: its booked share, unless the policy scales instances vertically.
     */
    default double heldShare(int ready, double demand) {
        return bookedShare();
    }

    /** A policy whose instances keep a static share at their SM request: they serve its rate and book it. Nothing parks. */
    sealed interface AtRequest extends CoScalingPolicy permits FastGsPolicy, InflessPolicy {

        FunctionProfile profile();

        /** Instances wanted, from the rates of seconds 0..now (inclusive) and the instances running and starting. */
        int desired(double[] rates, int now, int ready, int starting);

        @Override
        default RevisionScaler.Decision decide(double[] rates, int now, int ready, int starting, int parked) {
            return new RevisionScaler.Decision(desired(rates, now, ready, starting), 0, name());
        }

        @Override
        default double serviceRate(int ready, double demand) {
            return ready * profile().rpsAtRequest();
        }

        @Override
        default double bookedShare() {
            return profile().requestShare();
        }
    }
}
