package io.dilu.core.placement;

import java.util.List;

/**
 * A node and its GPUs, as published in the {@code dilu.io/gpu-inventory} annotation, and what the node offers pods
 * besides its GPUs: CPU and memory, which placement books when a request asks for them (the openb trace's nodes and
 * pods, as Weng et al.'s simulator models them). A node whose CPU and memory are not modelled offers
 * {@link #UNLIMITED} of both, so that only its GPUs decide.
 *
 * @param cpuMilli CPU for pods, thousandths of a core
 * @param memoryMib main memory for pods
 */
public record NodeInventory(String name, List<GpuDevice> gpus, long cpuMilli, long memoryMib) {

    /** CPU or memory that is not modelled: no request is ever refused for it. */
    public static final long UNLIMITED = Long.MAX_VALUE;

    public NodeInventory {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("node name must not be blank");
        }
        gpus = List.copyOf(gpus);
        if (cpuMilli < 0) {
            throw new IllegalArgumentException("node " + name + ": cpuMilli must be in 0.." + UNLIMITED
                    + " (UNLIMITED when not modelled), got " + cpuMilli);
        }
        if (memoryMib < 0) {
            throw new IllegalArgumentException("node " + name + ": memoryMib must be in 0.." + UNLIMITED
                    + " (UNLIMITED when not modelled), got " + memoryMib);
        }
    }

    /** A node whose CPU and memory are not modelled. */
    public NodeInventory(String name, List<GpuDevice> gpus) {
        this(name, gpus, UNLIMITED, UNLIMITED);
    }

    /** {@code count} identical GPUs named {@code <node>-gpu<i>}: the emulated inventories and simulations. */
    public static NodeInventory uniform(String name, int count, String model, long memoryMib, int smCount) {
        return new NodeInventory(name, java.util.stream.IntStream.range(0, count)
                .mapToObj(i -> new GpuDevice(name + "-gpu" + i, i, model, memoryMib, smCount))
                .toList());
    }

    /** This node with {@code cpuMilli} of CPU and {@code memoryMib} of memory for pods. */
    public NodeInventory withHost(long cpuMilli, long memoryMib) {
        return new NodeInventory(name, gpus, cpuMilli, memoryMib);
    }

    /** This node with its CPU and memory not modelled. */
    public NodeInventory withoutHost() {
        return new NodeInventory(name, gpus);
    }
}
