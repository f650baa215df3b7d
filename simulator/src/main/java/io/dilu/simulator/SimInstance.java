package io.dilu.simulator;

import io.dilu.core.placement.InstanceRequest;

/**
 * One instance of a simulated workload, in arrival order.
 *
 * @param smRequest SM request per GPU, fraction of a GPU
 * @param smLimit SM limit per GPU, fraction of a GPU
 * @param memoryMib memory per GPU
 */
public record SimInstance(String id, String function, InstanceType type, int gpus, double smRequest, double smLimit,
        long memoryMib) {

    public InstanceRequest toRequest() {
        int request = Math.max(1, (int) Math.round(smRequest * 1000));
        int limit = Math.max(request, (int) Math.round(smLimit * 1000));
        return new InstanceRequest(id, function, gpus, request, limit, memoryMib, type.splittable());
    }
}
