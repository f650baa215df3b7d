package io.dilu.core.placement;

/**
 * Baseline: static MPS-style quotas, one fixed share per instance — at its limit (like INFless-l: every
 * instance holds its limit for good) or at its request (like INFless-r: it never gets more). Packs with the
 * same best-fit order as Dilu so that only the quota model differs, and no model is split into pipeline stages.
 */
public final class StaticQuotaPlacement implements PlacementPolicy {

    private final ComplementaryPlacement packing;
    private final boolean atRequest;

    public StaticQuotaPlacement() {
        this(PlacementParameters.DEFAULTS);
    }

    /** Static quotas at each instance's limit. */
    public StaticQuotaPlacement(PlacementParameters params) {
        this(params, false);
    }

    private StaticQuotaPlacement(PlacementParameters params, boolean atRequest) {
        // With one share per instance, Σlimit = Σrequest ≤ Ω: γ never binds.
        this.packing = new ComplementaryPlacement(new PlacementParameters(params.omegaMilli(), params.omegaMilli(),
                params.alpha(), params.beta(), params.fragmentation(), 1, params.minStageMemoryMib()));
        this.atRequest = atRequest;
    }

    /** Static quotas at each instance's request. */
    public static StaticQuotaPlacement atRequest(PlacementParameters params) {
        return new StaticQuotaPlacement(params, true);
    }

    @Override
    public String name() {
        return atRequest ? "static-request" : "static-limit";
    }

    @Override
    public PlacementDecision decide(ClusterState state, InstanceRequest request) {
        if (request.cpuOnly()) {
            return packing.decide(state, request);
        }
        int share = atRequest ? request.requestMilli() : request.limitMilli();
        return packing.decide(state, new InstanceRequest(request.id(), request.function(), request.gpus(), share, share,
                request.memoryMib(), false, request.gpuModels(), request.cpuMilli(), request.hostMemoryMib()));
    }
}
