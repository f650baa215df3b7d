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
 */
public record Tenant(String id, ControlBlock block, int device, double request, double limit, boolean sloSensitive) {}
