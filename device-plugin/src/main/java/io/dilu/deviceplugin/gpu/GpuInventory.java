package io.dilu.deviceplugin.gpu;

import io.dilu.core.placement.GpuDevice;
import java.util.List;
import java.util.OptionalDouble;

/** Where the node agent learns which GPUs the node has and whether they are healthy. */
public interface GpuInventory {

    List<GpuDevice> gpus();

    /** Whether a GPU answers; an unknown UUID is unhealthy. */
    boolean healthy(String uuid);

    /** The share of the last sample period the GPU was busy, in [0, 1], when the inventory can measure it. */
    default OptionalDouble utilisation(String uuid) {
        return OptionalDouble.empty();
    }
}
