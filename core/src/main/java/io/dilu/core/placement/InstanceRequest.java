package io.dilu.core.placement;

import java.util.Set;

/**
 * What one function instance asks of the cluster. Shares are in thousandths of one GPU's SMs
 * ("milli-GPU", the unit of Ω and γ × 1000), memory per GPU in MiB.
 *
 * <p>A request may also ask for the node's CPU and memory (the openb trace's pods do), and may ask for no GPU at
 * all ({@code gpus = 0}, a CPU-only pod of the trace): then it asks no GPU share, and only a node's CPU and memory
 * decide where it goes.
 *
 * @param id unique instance identity (a pod UID in the cluster)
 * @param function the function it serves: a later instance follows the functions its earlier ones sit beside
 *     (workload affinity), and instances of one function share a GPU only when nothing else holds them
 * @param gpus GPUs it needs on one node (training workers, tensor-parallel models); each gets the shares below;
 *     0 for a CPU-only request
 * @param requestMilli guaranteed SM share per GPU, 1..1000 (0 when it asks no GPU)
 * @param limitMilli most SM share per GPU, requestMilli..1000 (0 when it asks no GPU)
 * @param memoryMib device memory per GPU (0 when it asks no GPU)
 * @param splittable whether the model may be cut into pipeline stages over several GPUs of one node when
 *     no single fragment holds it (LLM inference)
 * @param gpuModels the GPU models it may run on; empty for any (the openb trace's {@code gpu_spec})
 * @param cpuMilli CPU it takes on its node, thousandths of a core (0: none asked)
 * @param hostMemoryMib main memory it takes on its node (0: none asked)
 */
public record InstanceRequest(String id, String function, int gpus, int requestMilli, int limitMilli, long memoryMib,
        boolean splittable, Set<String> gpuModels, long cpuMilli, long hostMemoryMib) {

    /** An instance that runs on any GPU model. */
    public InstanceRequest(String id, String function, int gpus, int requestMilli, int limitMilli, long memoryMib,
            boolean splittable) {
        this(id, function, gpus, requestMilli, limitMilli, memoryMib, splittable, Set.of());
    }

    /** An instance that asks nothing of its node's CPU and memory. */
    public InstanceRequest(String id, String function, int gpus, int requestMilli, int limitMilli, long memoryMib,
            boolean splittable, Set<String> gpuModels) {
        this(id, function, gpus, requestMilli, limitMilli, memoryMib, splittable, gpuModels, 0, 0);
    }

    /** All of one GPU, thousandths: the most SM an instance may ask per GPU, and the most one function's may hold on one. */
    public static final int ONE_GPU_MILLI = 1000;

    public InstanceRequest {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("id must not be blank");
        }
        if (function == null || function.isBlank()) {
            throw new IllegalArgumentException("function must not be blank");
        }
        if (gpus < 0) {
            throw new IllegalArgumentException("gpus must be at least 0 (0: a CPU-only request), got " + gpus);
        }
        if (gpus == 0) {
            if (requestMilli != 0 || limitMilli != 0 || memoryMib != 0 || splittable || !gpuModels.isEmpty()) {
                throw new IllegalArgumentException("a CPU-only request (gpus = 0) asks no GPU: requestMilli, limitMilli "
                        + "and memoryMib must be 0, splittable false and gpuModels empty, got " + requestMilli + ", "
                        + limitMilli + ", " + memoryMib + ", " + splittable + ", " + gpuModels);
            }
        } else {
            if (requestMilli < 1 || requestMilli > ONE_GPU_MILLI) {
                throw new IllegalArgumentException("requestMilli must be in 1.." + ONE_GPU_MILLI + ", got " + requestMilli);
            }
            if (limitMilli < requestMilli || limitMilli > ONE_GPU_MILLI) {
                throw new IllegalArgumentException("limitMilli must be in " + requestMilli + ".." + ONE_GPU_MILLI + " (request.."
                        + ONE_GPU_MILLI + "), got " + limitMilli);
            }
            if (memoryMib < 1) {
                throw new IllegalArgumentException("memoryMib must be at least 1, got " + memoryMib);
            }
        }
        if (cpuMilli < 0) {
            throw new IllegalArgumentException("cpuMilli must be in 0.." + Long.MAX_VALUE + ", got " + cpuMilli);
        }
        if (hostMemoryMib < 0) {
            throw new IllegalArgumentException("hostMemoryMib must be in 0.." + Long.MAX_VALUE + ", got " + hostMemoryMib);
        }
        gpuModels = Set.copyOf(gpuModels);
    }

    /** A request for a node's CPU and memory only. */
    public static InstanceRequest cpuOnly(String id, String function, long cpuMilli, long hostMemoryMib) {
        return new InstanceRequest(id, function, 0, 0, 0, 0, false, Set.of(), cpuMilli, hostMemoryMib);
    }

    /** This request, also asking {@code cpuMilli} of CPU and {@code hostMemoryMib} of memory of its node. */
    public InstanceRequest withHost(long cpuMilli, long hostMemoryMib) {
        return new InstanceRequest(id, function, gpus, requestMilli, limitMilli, memoryMib, splittable, gpuModels,
                cpuMilli, hostMemoryMib);
    }

    /** This request under another identity (a resampled pod of a trace). */
    public InstanceRequest withId(String newId, String newFunction) {
        return new InstanceRequest(newId, newFunction, gpus, requestMilli, limitMilli, memoryMib, splittable, gpuModels,
                cpuMilli, hostMemoryMib);
    }

    /** Whether it asks for no GPU at all. */
    public boolean cpuOnly() {
        return gpus == 0;
    }

    /** Whether {@code gpu} is of a model this instance may run on. */
    public boolean runsOn(GpuDevice gpu) {
        return gpuModels.isEmpty() || gpuModels.contains(gpu.model());
    }
}
