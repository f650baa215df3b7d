package io.dilu.deviceplugin.gpu;

import io.dilu.core.placement.GpuDevice;
import java.util.List;

/** Where the node agent learns which GPUs the node has and whether they are healthy. */
public interface GpuInventory {

    List<GpuDevice> gpus();

    /** Whether a GPU answers; an unknown UUID is unhealthy. */
    boolean healthy(String uuid);
}
