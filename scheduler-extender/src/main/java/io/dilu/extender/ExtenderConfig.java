package io.dilu.extender;

import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.quota.Quota;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.OptionalDouble;

/**
 * The scheduler extender's configuration ({@code dilu.extender.*}). Algorithm 1's knobs are overrides: one left
 * unset keeps the default of {@link PlacementParameters#DEFAULTS}, the one place it is written.
 */
@ConfigMapping(prefix = "dilu.extender")
public interface ExtenderConfig {

    /** Most Σ SM request per GPU, in GPUs (Ω). */
    OptionalDouble omega();

    /** Most Σ SM limit per GPU, in GPUs (γ): how far limits may oversubscribe. */
    OptionalDouble gamma();

    /** Weight of SM in the best-fit score (α). */
    OptionalDouble alpha();

    /** Weight of memory in the best-fit score (β). */
    OptionalDouble beta();

    /**
     * Weight of fragmentation in the score: the change, in GPUs, that a placement makes to the SM share the
     * instances booked now could not use (Weng et al.'s expected fragmentation, learned from the booked mix).
     * 0 scores as the paper's Algorithm 1; on the Alibaba openb trace a weight of 20 allocates 0.03
     * percentage points more of the cluster on average (docs/benchmarks.md), too little to be the default.
     */
    OptionalDouble fragmentation();

    /**
     * GPU memory booked for a container that asks for {@code dilu.io/gpu-sm} but not {@code dilu.io/gpu-memory}
     * (the webhook normally fills it in). The node agent holds such a container to core's value, the default here.
     */
    @WithDefault("" + Quota.DEFAULT_MEMORY_MIB)
    long defaultMemoryMib();

    /**
     * How long a GPU chosen at filter stays booked without a bind: the scheduler may drop a pod after filtering
     * it (another plugin refused it, it was deleted), and its reservation must not hold the GPU for ever.
     */
    @WithDefault("30s")
    Duration reservationTtl();

    /**
     * The most time the API calls of one bind (read the pod, annotate it, create the Binding) may take together.
     * It must stay below the {@code httpTimeout} kube-scheduler gives the extender (10s in
     * {@code manifests/scheduler-extender}): a bind that runs out of time is rolled back and answered as failed
     * while the scheduler still listens, instead of finishing after the scheduler has given up on it.
     */
    @WithDefault("5s")
    Duration bindTimeout();

    /**
     * Events on pods (placed, refused): at most one per pod and reason per window, the occurrences in between
     * counted into the next one.
     */
    @WithDefault("1m")
    Duration eventWindow();

    /** At most this many events per window from the extender, whatever the pods do. */
    @WithDefault("300")
    int eventsPerWindow();

    default PlacementParameters placement() {
        PlacementParameters d = PlacementParameters.DEFAULTS;
        return d.withOmegaGamma(omega().orElse(d.omega()), gamma().orElse(d.gamma()))
                .withWeights(alpha().orElse(d.alpha()), beta().orElse(d.beta()))
                .withFragmentation(fragmentation().orElse(d.fragmentation()));
    }
}
