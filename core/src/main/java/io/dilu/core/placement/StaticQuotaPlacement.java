package io.dilu.core.placement;

/**
 * Baseline: static MPS-style quotas at the limit (request = limit, like INFless-l). Packs with the same
 * best-fit order as Dilu so that only the quota model differs: every instance holds its limit for good,
 * and no model is split into pipeline stages.
 */
public final class StaticQuotaPlacement implements PlacementPolicy {

    private final ComplementaryPlacement packing;

    public StaticQuotaPlacement() {
        this(PlacementParameters.DEFAULTS);
    }

    public StaticQuotaPlacement(PlacementParameters params) {
        // With request = limit, Σlimit = Σrequest ≤ Ω: γ never binds.
        this.packing = new ComplementaryPlacement(new PlacementParameters(params.omegaMilli(), params.omegaMilli(),
                params.alpha(), params.beta(), 1, params.minStageMemoryMib()));
    }

    @Override
    public String name() {
        return "static-limit";
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest request) {
        InstanceRequest atLimit = request.atLimit();
        return packing.decide(state, new InstanceRequest(atLimit.id(), atLimit.function(), atLimit.gpus(),
                atLimit.requestMilli(), atLimit.limitMilli(), atLimit.memoryMib(), false));
    }
}
