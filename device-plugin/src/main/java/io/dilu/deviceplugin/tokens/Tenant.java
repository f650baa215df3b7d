package io.dilu.deviceplugin.tokens;

import io.dilu.deviceplugin.control.ControlBlock;

/**
 * A container sharing a GPU, as the token loop sees it.
 *
 * @param id the container (pod UID / container name)
 * @param block its control block
 * @param device the GPU's index inside the container's block
 * @param request guaranteed SM share, fraction of the GPU
 * @param limit most SM share, fraction of the GPU
 * @param sloSensitive {@code dilu.io/priority: slo}
 * @param klcThreshold its KLC threshold ({@code dilu.io/klc-threshold}), NaN for the node's default
 * @param parked its pod is parked ({@code dilu.io/parked}): nothing is guaranteed to it (core's {@code TokenController})
 */
public record Tenant(String id, ControlBlock block, int device, double request, double limit, boolean sloSensitive,
        double klcThreshold, boolean parked) {

    /** A tenant whose pod is not parked. */
    public Tenant(String id, ControlBlock block, int device, double request, double limit, boolean sloSensitive,
            double klcThreshold) {
        this(id, block, device, request, limit, sloSensitive, klcThreshold, false);
    }

    /** A tenant judged by the node's default KLC threshold. */
    public Tenant(String id, ControlBlock block, int device, double request, double limit, boolean sloSensitive) {
        this(id, block, device, request, limit, sloSensitive, Double.NaN, false);
    }
}
