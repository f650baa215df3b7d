package io.dilu.deviceplugin.gpu;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import io.dilu.core.placement.GpuDevice;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import org.jboss.logging.Logger;

/** The node's real GPUs through NVML ({@code libnvidia-ml.so.1}), loaded with JNA. */
public final class NvmlInventory implements GpuInventory {

    private static final Logger LOG = Logger.getLogger(NvmlInventory.class);
    private static final int NVML_SUCCESS = 0;

    /** The few NVML entry points the agent needs (nvml.h; stable since the v2 names). */
    public interface Nvml extends Library {
        int nvmlInit_v2();

        int nvmlDeviceGetCount_v2(IntByReference count);

        int nvmlDeviceGetHandleByIndex_v2(int index, PointerByReference device);

        int nvmlDeviceGetUUID(Pointer device, byte[] uuid, int length);

        int nvmlDeviceGetName(Pointer device, byte[] name, int length);

        int nvmlDeviceGetMemoryInfo(Pointer device, Memory memory);

        int nvmlDeviceGetAttributes_v2(Pointer device, Attributes attributes);

        int nvmlDeviceGetUtilizationRates(Pointer device, Utilization utilization);
    }

    /** nvmlUtilization_t: percent of the last sample period a kernel ran / memory was read or written. */
    @Structure.FieldOrder({"gpu", "memory"})
    public static final class Utilization extends Structure {
        public int gpu;
        public int memory;
    }

    /** nvmlMemory_t */
    @Structure.FieldOrder({"total", "free", "used"})
    public static final class Memory extends Structure {
        public long total;
        public long free;
        public long used;
    }

    /** nvmlDeviceAttributes_t */
    @Structure.FieldOrder({"multiprocessorCount", "sharedCopyEngineCount", "sharedDecoderCount",
            "sharedEncoderCount", "sharedJpegCount", "sharedOfaCount", "gpuInstanceSliceCount",
            "computeInstanceSliceCount", "memorySizeMB"})
    public static final class Attributes extends Structure {
        public int multiprocessorCount;
        public int sharedCopyEngineCount;
        public int sharedDecoderCount;
        public int sharedEncoderCount;
        public int sharedJpegCount;
        public int sharedOfaCount;
        public int gpuInstanceSliceCount;
        public int computeInstanceSliceCount;
        public long memorySizeMB;
    }

    private final Nvml nvml;
    private final List<GpuDevice> gpus;
    private final List<Pointer> handles;

    private NvmlInventory(Nvml nvml, List<GpuDevice> gpus, List<Pointer> handles) {
        this.nvml = nvml;
        this.gpus = List.copyOf(gpus);
        this.handles = List.copyOf(handles);
    }

    /** The node's GPUs, or empty (with the reason logged) when NVML is missing or fails. */
    public static Optional<NvmlInventory> load() {
        Nvml nvml;
        try {
            nvml = Native.load("nvidia-ml", Nvml.class);
        } catch (UnsatisfiedLinkError e) {
            LOG.infof("no NVML on this node (%s)", e.getMessage());
            return Optional.empty();
        }
        int rc = nvml.nvmlInit_v2();
        if (rc != NVML_SUCCESS) {
            LOG.warnf("nvmlInit_v2 failed with NVML error %d", rc);
            return Optional.empty();
        }
        IntByReference count = new IntByReference();
        if ((rc = nvml.nvmlDeviceGetCount_v2(count)) != NVML_SUCCESS) {
            LOG.warnf("nvmlDeviceGetCount_v2 failed with NVML error %d", rc);
            return Optional.empty();
        }
        Map<String, Integer> cudaSms = CudaDevices.smCounts();
        List<GpuDevice> gpus = new ArrayList<>();
        List<Pointer> handles = new ArrayList<>();
        for (int i = 0; i < count.getValue(); i++) {
            PointerByReference handle = new PointerByReference();
            byte[] uuid = new byte[96];
            byte[] name = new byte[96];
            Memory memory = new Memory();
            Attributes attributes = new Attributes();
            if (nvml.nvmlDeviceGetHandleByIndex_v2(i, handle) != NVML_SUCCESS
                    || nvml.nvmlDeviceGetUUID(handle.getValue(), uuid, uuid.length) != NVML_SUCCESS
                    || nvml.nvmlDeviceGetName(handle.getValue(), name, name.length) != NVML_SUCCESS
                    || nvml.nvmlDeviceGetMemoryInfo(handle.getValue(), memory) != NVML_SUCCESS) {
                LOG.warnf("GPU %d does not answer NVML; left out", i);
                continue;
            }
            // CUDA's multiprocessor count is right for every GPU; NVML's attributes are documented for MIG
            // devices only, so they are the fallback. A GPU whose SM count is unknown is not offered: its
            // MaxTokens would be a guess.
            int sms = cudaSms.getOrDefault(text(uuid), 0);
            if (sms <= 0 && nvml.nvmlDeviceGetAttributes_v2(handle.getValue(), attributes) == NVML_SUCCESS) {
                sms = attributes.multiprocessorCount;
            }
            if (sms <= 0) {
                LOG.errorf("GPU %d (%s) is left out: neither the CUDA driver nor NVML reports its SM count", i,
                        text(uuid));
                continue;
            }
            gpus.add(new GpuDevice(text(uuid), i, text(name), memory.total / (1024 * 1024), sms));
            handles.add(handle.getValue());
        }
        return Optional.of(new NvmlInventory(nvml, gpus, handles));
    }

    private static String text(byte[] cString) {
        int n = 0;
        while (n < cString.length && cString[n] != 0) {
            n++;
        }
        return new String(cString, 0, n, StandardCharsets.US_ASCII);
    }

    @Override
    public List<GpuDevice> gpus() {
        return gpus;
    }

    /** NVML's handle of the {@code index}-th GPU of {@link #gpus()} (for the backstop's per-process reads). */
    public Pointer handle(int index) {
        return handles.get(index);
    }

    @Override
    public boolean healthy(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                return nvml.nvmlDeviceGetMemoryInfo(handles.get(i), new Memory()) == NVML_SUCCESS;
            }
        }
        return false;
    }

    @Override
    public OptionalDouble utilisation(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                Utilization u = new Utilization();
                return nvml.nvmlDeviceGetUtilizationRates(handles.get(i), u) == NVML_SUCCESS
                        ? OptionalDouble.of(u.gpu / 100.0) : OptionalDouble.empty();
            }
        }
        return OptionalDouble.empty();
    }
}
