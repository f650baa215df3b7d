package io.dilu.core.tokens;

/** The per-GPU state of Algorithm 2. */
public enum ControllerState {
    /** No SLO-sensitive instance shares the GPU: everyone may run up to its limit. */
    NONE,
    /** An SLO-sensitive instance's launch cycle stretched past η_violation: it gets its limit, others shrink. */
    EMERGENCY,
    /** SLO-sensitive instances are idle or alone in launching: shares grow back by η_increase per period. */
    RECOVERY,
    /** Everyone is launching and no SLO is hurt: hold. */
    CONTENTION
}
