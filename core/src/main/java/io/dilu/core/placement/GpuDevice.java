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

    /** How the node agent names the UUIDs of emulated GPUs ({@code GPU-emu-<node>-<index>}); no real GPU's starts so. */
    public static final String EMULATED_UUID_PREFIX = "GPU-emu-";

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

    /** Whether this is an emulated GPU (figures measured on it are emulated, not GPU measurements). */
    public boolean emulated() {
        return uuid.startsWith(EMULATED_UUID_PREFIX);
    }
}
