package io.dilu.deviceplugin.backstop;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import io.dilu.core.backstop.ShareBackstop;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jboss.logging.Logger;

/**
 * What NVML says each process on the node's GPUs uses: the driver's own accounting, which no container can write.
 *
 * <ul>
 *   <li><b>Memory</b>: {@code nvmlDeviceGetComputeRunningProcesses_v3} (falling back to {@code _v2}, then the
 *       original, on older drivers), and the MPS clients of {@code nvmlDeviceGetMPSComputeRunningProcesses_v3}
 *       where the driver has it. NVML documents {@code usedGpuMemory} as "all of the memory used by the
 *       application", its CUDA context included (518 MiB per process on an H100 with driver 580,
 *       docs/gpu/h100-nvml-backstop-2026-11-26.txt); {@code NVML_VALUE_NOT_AVAILABLE} reads as not known.</li>
 *   <li><b>SM use</b>: {@code nvmlDeviceGetProcessUtilization}, the samples newer than the last read, averaged per
 *       process; a process without a sample ran nothing (NVML returns samples only for processes with non-zero
 *       utilisation). Its {@code smUtil} is the share of time any kernel of the process ran, not of SMs (one block
 *       on one of 132 SMs read 85% in the same measurement): {@link ShareBackstop.Measure#TIME_SHARE}.</li>
 * </ul>
 *
 * <p>A GPU whose process list cannot be read fails the round ({@link ReadFailure}); a GPU without per-process
 * utilisation ({@code NVML_ERROR_NOT_SUPPORTED}) gives memory only. The pids are the host's: the agent needs
 * {@code hostPID} to see them in /proc.
 */
public final class NvmlProcesses implements GpuProcesses {

    private static final Logger LOG = Logger.getLogger(NvmlProcesses.class);
    private static final int SUCCESS = 0;
    private static final int ERROR_NOT_SUPPORTED = 3;
    private static final int ERROR_NOT_FOUND = 6;
    private static final int ERROR_INSUFFICIENT_SIZE = 7;
    private static final long VALUE_NOT_AVAILABLE = -1L; // 0xFFFFFFFFFFFFFFFF
    /** nvmlProcessInfo_t of the _v2/_v3 calls: pid, (padding), usedGpuMemory, gpuInstanceId, computeInstanceId. */
    private static final int INFO_SIZE = 24;
    /** nvmlProcessInfo_v1_t: pid, (padding), usedGpuMemory. */
    private static final int INFO_V1_SIZE = 16;
    /** nvmlProcessUtilizationSample_t: pid, (padding), timeStamp, smUtil, memUtil, encUtil, decUtil. */
    private static final int SAMPLE_SIZE = 32;

    /** The entry points read here; each may be missing from an older driver (UnsatisfiedLinkError when called). */
    public interface Calls extends Library {
        int nvmlDeviceGetComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos);

        int nvmlDeviceGetComputeRunningProcesses_v2(Pointer device, IntByReference count, Pointer infos);

        int nvmlDeviceGetComputeRunningProcesses(Pointer device, IntByReference count, Pointer infos);

        int nvmlDeviceGetMPSComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos);

        int nvmlDeviceGetProcessUtilization(Pointer device, Pointer samples, IntByReference count, long lastSeen);
    }

    private final Calls nvml;
    private final int gpus;
    private final java.util.function.IntFunction<Pointer> handles;
    private final long[] lastSeen;
    private final boolean[] utilisationSupported;
    private int processCall = 3; // the newest _vN that has worked: 3, 2 or 1
    private boolean mps = true;

    public NvmlProcesses(NvmlInventory inventory) {
        this(Native.load("nvidia-ml", Calls.class), inventory.gpus().size(), inventory::handle);
    }

    /**
     * Over any NVML: the driver's through JNA, or one that stands for it (tests; answers recorded on a GPU).
     *
     * @param handles NVML's handle of each of the node's {@code gpus} GPUs, by index
     */
    public NvmlProcesses(Calls nvml, int gpus, java.util.function.IntFunction<Pointer> handles) {
        this.nvml = nvml;
        this.gpus = gpus;
        this.handles = handles;
        this.lastSeen = new long[gpus];
        this.utilisationSupported = new boolean[gpus];
        java.util.Arrays.fill(utilisationSupported, true);
    }

    @Override
    public ShareBackstop.Measure measure() {
        return ShareBackstop.Measure.TIME_SHARE;
    }

    /** The driver's own accounting, which no container can write. */
    @Override
    public boolean shareTrusted() {
        return true;
    }

    @Override
    public synchronized List<Use> memory(java.util.Collection<Long> pids) throws ReadFailure {
        List<Use> uses = new ArrayList<>();
        for (int g = 0; g < gpus; g++) {
            int gpu = g;
            memoryOf(handles.apply(g), g).forEach((pid, bytes) -> uses.add(new Use(gpu, pid, 0, bytes, Double.NaN)));
        }
        return uses;
    }

    /** Every compute process of one GPU and its memory, MPS clients' too where the driver accounts them. */
    private Map<Long, Long> memoryOf(Pointer device, int g) throws ReadFailure {
        Map<Long, Long> memory = new LinkedHashMap<>(processes(device, g));
        if (mps) {
            try {
                list(device, g, (d, n, p) -> nvml.nvmlDeviceGetMPSComputeRunningProcesses_v3(d, n, p), INFO_SIZE)
                        .forEach((pid, bytes) -> memory.merge(pid, bytes, Math::max));
            } catch (UnsatisfiedLinkError | ReadFailure e) {
                mps = false; // a driver without MPS accounting: the plain list is all there is
            }
        }
        return memory;
    }

    @Override
    public synchronized List<Use> read() throws ReadFailure {
        List<Use> uses = new ArrayList<>();
        for (int g = 0; g < gpus; g++) {
            Pointer device = handles.apply(g);
            Map<Long, Long> memory = memoryOf(device, g);
            Map<Long, Double> share = utilisation(device, g);
            for (Map.Entry<Long, Long> p : memory.entrySet()) {
                double s = share == null ? Double.NaN : share.getOrDefault(p.getKey(), 0.0);
                uses.add(new Use(g, p.getKey(), 0, p.getValue(), s));
            }
            if (share != null) {
                // Samples of a process the list no longer shows: it ran, and has ended or released its context.
                for (Map.Entry<Long, Double> s : share.entrySet()) {
                    if (!memory.containsKey(s.getKey())) {
                        uses.add(new Use(g, s.getKey(), 0, -1, s.getValue()));
                    }
                }
            }
        }
        return uses;
    }

    @FunctionalInterface
    private interface ListCall {
        int call(Pointer device, IntByReference count, Pointer infos);
    }

    /** The compute processes of one GPU, by the newest call the driver has. */
    private Map<Long, Long> processes(Pointer device, int g) throws ReadFailure {
        while (true) {
            try {
                return switch (processCall) {
                    case 3 -> list(device, g, nvml::nvmlDeviceGetComputeRunningProcesses_v3, INFO_SIZE);
                    case 2 -> list(device, g, nvml::nvmlDeviceGetComputeRunningProcesses_v2, INFO_SIZE);
                    default -> list(device, g, nvml::nvmlDeviceGetComputeRunningProcesses, INFO_V1_SIZE);
                };
            } catch (UnsatisfiedLinkError e) {
                if (processCall == 1) {
                    throw new ReadFailure("NVML has no nvmlDeviceGetComputeRunningProcesses");
                }
                LOG.infof("NVML has no nvmlDeviceGetComputeRunningProcesses%s; using an older form",
                        processCall == 3 ? "_v3" : "_v2");
                processCall--;
            }
        }
    }

    /** pid → used bytes (-1 when NVML does not say), growing the buffer while processes appear. */
    private Map<Long, Long> list(Pointer device, int g, ListCall call, int size) throws ReadFailure {
        int capacity = 64;
        for (int attempt = 0; attempt < 4; attempt++) {
            Memory buffer = new Memory((long) capacity * size);
            IntByReference count = new IntByReference(capacity);
            int rc = call.call(device, count, buffer);
            if (rc == ERROR_INSUFFICIENT_SIZE) {
                capacity = Math.max(capacity * 2, count.getValue() + 16);
                continue;
            }
            if (rc != SUCCESS) {
                throw new ReadFailure("NVML error " + rc + " reading the processes of GPU " + g);
            }
            Map<Long, Long> out = new HashMap<>();
            for (int i = 0; i < Math.min(count.getValue(), capacity); i++) {
                long pid = Integer.toUnsignedLong(buffer.getInt((long) i * size));
                long used = buffer.getLong((long) i * size + 8);
                out.put(pid, used == VALUE_NOT_AVAILABLE ? -1 : used);
            }
            return out;
        }
        throw new ReadFailure("the processes of GPU " + g + " kept growing past the buffer");
    }

    /** pid → mean smUtil (0..1) of the samples since the last read; null when the GPU does not sample processes. */
    private Map<Long, Double> utilisation(Pointer device, int g) {
        if (!utilisationSupported[g]) {
            return null;
        }
        try {
            IntByReference count = new IntByReference(0);
            int rc = nvml.nvmlDeviceGetProcessUtilization(device, Pointer.NULL, count, lastSeen[g]);
            boolean first = lastSeen[g] == 0;
            if (rc == ERROR_NOT_FOUND) {
                return first ? null : Map.of();
            }
            if (rc != SUCCESS && rc != ERROR_INSUFFICIENT_SIZE) {
                if (rc == ERROR_NOT_SUPPORTED) {
                    utilisationSupported[g] = false;
                    LOG.infof("GPU %d does not sample per-process utilisation: the backstop judges its memory only", g);
                }
                return null;
            }
            int capacity = Math.max(count.getValue(), 1) + 16;
            Memory buffer = new Memory((long) capacity * SAMPLE_SIZE);
            count.setValue(capacity);
            rc = nvml.nvmlDeviceGetProcessUtilization(device, buffer, count, lastSeen[g]);
            if (rc == ERROR_NOT_FOUND) {
                return first ? null : Map.of();
            }
            if (rc != SUCCESS) {
                return null;
            }
            Map<Long, double[]> sums = new HashMap<>();
            long newest = lastSeen[g];
            for (int i = 0; i < Math.min(count.getValue(), capacity); i++) {
                long at = (long) i * SAMPLE_SIZE;
                long pid = Integer.toUnsignedLong(buffer.getInt(at));
                long stamp = buffer.getLong(at + 8);
                int sm = Math.min(100, buffer.getInt(at + 16));
                newest = Math.max(newest, stamp);
                double[] s = sums.computeIfAbsent(pid, k -> new double[2]);
                s[0] += Math.max(0, sm) / 100.0;
                s[1]++;
            }
            lastSeen[g] = newest;
            if (first) {
                return null; // the driver's whole buffer, older than this reading's interval
            }
            Map<Long, Double> out = new HashMap<>();
            sums.forEach((pid, s) -> out.put(pid, s[0] / s[1]));
            return out;
        } catch (UnsatisfiedLinkError e) {
            utilisationSupported[g] = false;
            LOG.infof("NVML has no nvmlDeviceGetProcessUtilization: the backstop judges memory only");
            return null;
        }
    }
}
