package io.dilu.core.scaling;

import java.util.OptionalDouble;

/**
 * What one tick saw of a revision: its ready pods, its parked ones (kept with their model in GPU memory, their SM
 * booking given back, out of the request path: {@link RevisionScaler}), the request rate and concurrency its pods
 * served themselves (estimated for all ready pods from those that answered; empty when none did), and what Knative's
 * activators reported proxying to it (0 without a fresh report). Pods and activators count different requests, so
 * the revision's load is their sum.
 */
public record Readings(int readyPods, int parkedPods, OptionalDouble podsRps, OptionalDouble podsConcurrency,
        double activatorRps, double activatorConcurrency) {

    public Readings {
        if (readyPods < 0 || parkedPods < 0 || !(activatorRps >= 0) || !(activatorConcurrency >= 0)) {
            throw new IllegalArgumentException("readings must be >= 0, got " + readyPods + ", " + parkedPods + ", "
                    + activatorRps + ", " + activatorConcurrency);
        }
    }

    /** A revision's pods' own readings, no activator's report. */
    public static Readings ofPods(int readyPods, int parkedPods, double rps) {
        return new Readings(readyPods, parkedPods, OptionalDouble.of(rps), OptionalDouble.empty(), 0, 0);
    }

    /** The same readings with the activators' share replaced. */
    public Readings withActivators(double rps, double concurrency) {
        return new Readings(readyPods, parkedPods, podsRps, podsConcurrency, rps, concurrency);
    }

    /**
     * The revision's request rate this second, or empty when nothing was measured: pods that did not answer must
     * not look like an idle revision (nor one with only the activators' share). A revision without ready pods
     * has the activators' report alone, zero without one.
     */
    public OptionalDouble rps() {
        return load(podsRps, activatorRps);
    }

    /** The revision's in-flight requests, on the same rule as {@link #rps()}. */
    public OptionalDouble concurrency() {
        return load(podsConcurrency, activatorConcurrency);
    }

    private OptionalDouble load(OptionalDouble pods, double activators) {
        if (pods.isPresent()) {
            return OptionalDouble.of(pods.getAsDouble() + activators);
        }
        return readyPods == 0 ? OptionalDouble.of(activators) : OptionalDouble.empty();
    }
}
