package io.dilu.core.placement;

/**
 * What one function instance asks of the cluster. Shares are in thousandths of one GPU's SMs
 * ("milli-GPU", the unit of Ω and γ × 1000), memory per GPU in MiB.
 *
 * @param id unique instance identity (a pod UID in the cluster)
 * @param function the function it serves: a later instance follows the functions its earlier ones sit beside
 *     (workload affinity), and instances of one function share a GPU only when nothing else holds them
 * @param gpus GPUs it needs on one node (training workers, tensor-parallel models); each gets the shares below
 * @param requestMilli guaranteed SM share per GPU, 1..1000
 * @param limitMilli most SM share per GPU, requestMilli..1000
 * @param memoryMib device memory per GPU
 * @param splittable whether the model may be cut into pipeline stages over several GPUs of one node when
 *     no single fragment holds it (LLM inference)
 * @param gpuModels the GPU models it may run on; empty for any (the openb trace's {@code gpu_spec})
 */
public record InstanceRequest(String id, String function, int gpus, int requestMilli, int limitMilli, long memoryMib,
        boolean splittable, java.util.Set<String> gpuModels) {

    /** An instance that runs on any GPU model. */
    public InstanceRequest(String id, String function, int gpus, int requestMilli, int limitMilli, long memoryMib,
            boolean splittable) {
        this(id, function, gpus, requestMilli, limitMilli, memoryMib, splittable, java.util.Set.of());
    }

    public InstanceRequest {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("id must not be blank");
        }
        if (function == null || function.isBlank()) {
            throw new IllegalArgumentException("function must not be blank");
        }
        if (gpus < 1) {
            throw new IllegalArgumentException("gpus must be at least 1, got " + gpus);
        }
        if (requestMilli < 1 || requestMilli > 1000) {
            throw new IllegalArgumentException("requestMilli must be in 1..1000, got " + requestMilli);
        }
        if (limitMilli < requestMilli || limitMilli > 1000) {
            throw new IllegalArgumentException(
                    "limitMilli must be in " + requestMilli + "..1000 (request..1000), got " + limitMilli);
        }
        if (memoryMib < 1) {
            throw new IllegalArgumentException("memoryMib must be at least 1, got " + memoryMib);
        }
        gpuModels = java.util.Set.copyOf(gpuModels);
    }

    /** Whether {@code gpu} is of a model this instance may run on. */
    public boolean runsOn(GpuDevice gpu) {
        return gpuModels.isEmpty() || gpuModels.contains(gpu.model());
    }
}
