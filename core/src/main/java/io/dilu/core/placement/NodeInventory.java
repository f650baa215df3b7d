package io.dilu.core.placement;

import java.util.List;

/** A node and its GPUs, as published in the {@code dilu.io/gpu-inventory} annotation. */
public record NodeInventory(String name, List<GpuDevice> gpus) {

    public NodeInventory {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("node name must not be blank");
        }
        gpus = List.copyOf(gpus);
    }

    /** {@code count} identical GPUs named {@code <node>-gpu<i>}: the emulated inventories and simulations. */
    public static NodeInventory uniform(String name, int count, String model, long memoryMib, int smCount) {
        return new NodeInventory(name, java.util.stream.IntStream.range(0, count)
                .mapToObj(i -> new GpuDevice(name + "-gpu" + i, i, model, memoryMib, smCount))
                .toList());
    }
}
