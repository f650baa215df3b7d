package io.dilu.core.placement;

/**
 * The knobs of Algorithm 1.
 *
 * @param omegaMilli most Σ SM request per GPU, thousandths (Ω = 1.0 → 1000)
 * @param gammaMilli most Σ SM limit per GPU, thousandths (γ = 1.5 → 1500)
 * @param alpha weight of SM in the best-fit score (0.6)
 * @param beta weight of memory in the best-fit score (0.4)
 * @param fragmentation weight of the change in expected fragmentation, in GPUs, that a placement makes
 *     ({@link FragmentationOutlook}); 0, the default, leaves Algorithm 1's score as the paper has it
 *     (docs/benchmarks.md, "openb against FGD", measures what other weights change)
 * @param maxPipelineStages most GPUs a splittable model is cut over (4)
 * @param minStageMemoryMib smallest memory a pipeline stage may hold (1 GiB), so fragments of a few MiB are
 *     never used as stages
 */
public record PlacementParameters(
        int omegaMilli, int gammaMilli, double alpha, double beta, double fragmentation, int maxPipelineStages,
        long minStageMemoryMib) {

    public static final PlacementParameters DEFAULTS = new PlacementParameters(1000, 1500, 0.6, 0.4, 0, 4, 1024);

    public PlacementParameters {
        if (omegaMilli < 1 || omegaMilli > 4000) {
            throw new IllegalArgumentException("omega must be in 0.001..4.0, got " + omegaMilli / 1000.0);
        }
        if (gammaMilli < omegaMilli || gammaMilli > 8000) {
            throw new IllegalArgumentException(
                    "gamma must be in omega (" + omegaMilli / 1000.0 + ")..8.0, got " + gammaMilli / 1000.0);
        }
        if (!(alpha >= 0) || !(beta >= 0) || alpha + beta <= 0) {
            throw new IllegalArgumentException("alpha and beta must be >= 0 and not both 0, got " + alpha + ", " + beta);
        }
        if (!(fragmentation >= 0) || Double.isInfinite(fragmentation)) {
            throw new IllegalArgumentException("fragmentation must be a finite weight >= 0, got " + fragmentation);
        }
        if (maxPipelineStages < 1) {
            throw new IllegalArgumentException("maxPipelineStages must be at least 1, got " + maxPipelineStages);
        }
        if (minStageMemoryMib < 1) {
            throw new IllegalArgumentException("minStageMemoryMib must be at least 1, got " + minStageMemoryMib);
        }
    }

    /** Ω in GPUs, as configuration states it. */
    public double omega() {
        return omegaMilli / 1000.0;
    }

    /** γ in GPUs, as configuration states it. */
    public double gamma() {
        return gammaMilli / 1000.0;
    }

    public PlacementParameters withOmegaGamma(double omega, double gamma) {
        return new PlacementParameters((int) Math.round(omega * 1000), (int) Math.round(gamma * 1000),
                alpha, beta, fragmentation, maxPipelineStages, minStageMemoryMib);
    }

    public PlacementParameters withWeights(double alpha, double beta) {
        return new PlacementParameters(omegaMilli, gammaMilli, alpha, beta, fragmentation, maxPipelineStages, minStageMemoryMib);
    }

    public PlacementParameters withFragmentation(double weight) {
        return new PlacementParameters(omegaMilli, gammaMilli, alpha, beta, weight, maxPipelineStages, minStageMemoryMib);
    }

    public PlacementParameters withMaxPipelineStages(int stages) {
        return new PlacementParameters(omegaMilli, gammaMilli, alpha, beta, fragmentation, stages, minStageMemoryMib);
    }
}
