package io.dilu.core.placement;

/**
 * One physical GPU as the node agent reports it.
 *
 * @param uuid stable identity, e.g. {@code GPU-8f0c…} (what {@code NVIDIA_VISIBLE_DEVICES} takes)
 * @param index position on its node
 * @param model product name, e.g. {@code A100-SXM4-40GB}
 * @param memoryMib device memory
 * @param smCount streaming multiprocessors
 */
public record GpuDevice(String uuid, int index, String model, long memoryMib, int smCount) {

    public GpuDevice {
        if (uuid == null || uuid.isBlank()) {
            throw new IllegalArgumentException("uuid must not be blank");
        }
        if (memoryMib < 1) {
            throw new IllegalArgumentException("memoryMib must be at least 1, got " + memoryMib);
        }
        if (smCount < 1) {
            throw new IllegalArgumentException("smCount must be at least 1, got " + smCount);
        }
    }
}
