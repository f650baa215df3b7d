package io.dilu.deviceplugin.gpu;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.ptr.IntByReference;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.jboss.logging.Logger;

/**
 * SM counts from the CUDA driver ({@code libcuda.so.1}, loaded with JNA): the multiprocessor count attribute
 * is what CUDA itself schedules on, for every GPU, where NVML's {@code nvmlDeviceGetAttributes_v2} is
 * documented for MIG devices only. The emulated driver answers the same call.
 */
public final class CudaDevices {

    private static final Logger LOG = Logger.getLogger(CudaDevices.class);
    private static final int CUDA_SUCCESS = 0;
    /** CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT in cuda.h. */
    private static final int MULTIPROCESSOR_COUNT = 16;

    /** The four driver entry points this needs (cuda.h, stable since CUDA 2). */
    public interface Cuda extends Library {
        int cuInit(int flags);

        int cuDeviceGetCount(IntByReference count);

        int cuDeviceGet(IntByReference device, int ordinal);

        int cuDeviceGetAttribute(IntByReference value, int attribute, int device);

        /** CUuuid is 16 bytes, filled in place. */
        int cuDeviceGetUuid(byte[] uuid, int device);
    }

    private CudaDevices() {}

    /** SMs per GPU UUID (NVML's form, {@code GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}) from the node's driver. */
    public static Map<String, Integer> smCounts() {
        return smCounts("cuda");
    }

    /**
     * SMs per GPU UUID from the driver library named (a name JNA resolves, or a path); empty, with the reason
     * logged, when there is no driver or it fails.
     */
    public static Map<String, Integer> smCounts(String library) {
        Cuda cuda;
        try {
            cuda = Native.load(library, Cuda.class);
        } catch (UnsatisfiedLinkError e) {
            LOG.warnf("no CUDA driver (%s): SM counts cannot be read from it", e.getMessage());
            return Map.of();
        }
        int rc = cuda.cuInit(0);
        IntByReference count = new IntByReference();
        if (rc != CUDA_SUCCESS || (rc = cuda.cuDeviceGetCount(count)) != CUDA_SUCCESS) {
            LOG.warnf("the CUDA driver failed with error %d: SM counts cannot be read from it", rc);
            return Map.of();
        }
        Map<String, Integer> sms = new HashMap<>();
        for (int i = 0; i < count.getValue(); i++) {
            IntByReference device = new IntByReference();
            IntByReference value = new IntByReference();
            byte[] uuid = new byte[16];
            if (cuda.cuDeviceGet(device, i) != CUDA_SUCCESS
                    || cuda.cuDeviceGetAttribute(value, MULTIPROCESSOR_COUNT, device.getValue()) != CUDA_SUCCESS
                    || cuda.cuDeviceGetUuid(uuid, device.getValue()) != CUDA_SUCCESS || value.getValue() < 1) {
                LOG.warnf("CUDA device %d does not report its SM count", i);
                continue;
            }
            sms.put(uuidString(uuid), value.getValue());
        }
        return Map.copyOf(sms);
    }

    /** NVML's spelling of a CUDA UUID. */
    static String uuidString(byte[] uuid) {
        String hex = HexFormat.of().formatHex(uuid);
        return "GPU-" + hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-"
                + hex.substring(16, 20) + "-" + hex.substring(20);
    }
}
