package io.dilu.deviceplugin.backstop;

import io.dilu.core.backstop.ShareBackstop;
import java.util.List;

/**
 * What the GPU itself says each process on it uses: NVML on real GPUs ({@link NvmlProcesses}), the kernel's
 * records of the emulator's processes on emulated ones ({@link EmulatedProcesses}). Not what the hook says: the
 * backstop exists for processes the hook does not see.
 */
public interface GpuProcesses {

    /** What {@link Use#share} means. */
    ShareBackstop.Measure measure();

    /**
     * Whether {@link Use#share} comes from where no tenant can write it (NVML: the driver's accounting), so that a
     * process may be ended on it. An emulated GPU's thread blocks are counted in state every tenant on it can write:
     * a neighbour could make a process look busy, so faults on them are reported, never acted on.
     */
    boolean shareTrusted();

    /**
     * Every process on every GPU of the node now, by host pid.
     *
     * @throws ReadFailure when the GPUs could not be read at all (then nothing is judged this round)
     */
    List<Use> read() throws ReadFailure;

    /**
     * The GPU memory of these processes now, and nothing else: a read cheap enough to repeat many times a second
     * between {@link #read}s, which it leaves as they were (no share is measured, each {@link Use#share} NaN). May
     * answer for more processes than asked (NVML lists every process of a GPU in one call).
     *
     * @param pids host pids of processes the last {@link #read} found on a GPU
     * @throws ReadFailure when the GPUs could not be read at all
     */
    List<Use> memory(java.util.Collection<Long> pids) throws ReadFailure;

    /**
     * One process on one GPU.
     *
     * @param gpu the GPU's index on the node
     * @param startTicks its start time when the source knows it, else 0 (the backstop reads it from /proc)
     * @param memoryBytes GPU memory it holds; negative when not known
     * @param share what it used of the GPU since the previous read ({@link #measure()}); NaN when not known (its
     *     first read, or a GPU that does not sample)
     */
    record Use(int gpu, long pid, long startTicks, long memoryBytes, double share) {}

    /** The GPUs could not be read. */
    final class ReadFailure extends Exception {
        public ReadFailure(String message) {
            super(message);
        }
    }
}
