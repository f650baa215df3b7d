package io.dilu.autoscaler.decide;

import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.Readings;

/**
 * The most of a revision's load the activators' reports may claim: what its {@code max-scale} instances carry at the
 * per-instance figure its class scales by ({@link Knobs#totalPerPod}: the serving rate for Dilu's class, the target of
 * Knative's metric for the KPA). Above it the decision is {@code max-scale} anyway; the cap keeps a report beyond any
 * instance count from reaching the rate, the panic window or the gauges. Only the metric the class scales by is
 * capped (the other is not in the same unit); the activators' ceilings ({@code max-revision-concurrency}, {@code
 * max-revision-rps}) apply to both before this. A pure function.
 */
public final class ActivatorCap {

    private ActivatorCap() {}

    public static Readings capped(Readings readings, Knobs knobs) {
        double most = knobs.bounds().max() * knobs.totalPerPod();
        if (!(most > 0) || Double.isInfinite(most)) {
            return readings;
        }
        boolean byRate = switch (knobs.policy()) {
            case Knobs.Lazy lazy -> true;
            case Knobs.Kpa kpa -> kpa.rps();
        };
        return byRate ? readings.withActivators(Math.min(readings.activatorRps(), most), readings.activatorConcurrency())
                : readings.withActivators(readings.activatorRps(), Math.min(readings.activatorConcurrency(), most));
    }
}
