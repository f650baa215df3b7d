package io.dilu.kube;

/**
 * The node label {@value #KEY} that NVIDIA's GPU feature discovery (GFD) writes, and how its value spells a GPU
 * model that the node agent reports in {@code dilu.io/gpu-inventory}.
 *
 * <p>Both read NVML's device name ({@code nvmlDeviceGetName}): the agent keeps it as it is ({@code NVIDIA
 * A100-SXM4-40GB}), GFD replaces every space with '-' ({@code NVIDIA-A100-SXM4-40GB}), because a label value may
 * not hold a space, and appends {@value #SHARED_SUFFIX} when the NVIDIA device plugin time-slices the GPU
 * (k8s-device-plugin, {@code internal/lm/resource.go}, {@code productLabel}). A MIG-partitioned GPU's value
 * ({@code …-MIG-1g.5gb}) names no whole GPU and no inventory model: Dilu shares whole GPUs.
 */
public final class GpuProductLabel {

    public static final String KEY = "nvidia.com/gpu.product";
    public static final String SHARED_SUFFIX = "-SHARED";

    private GpuProductLabel() {}

    /** GFD's value for GPUs of the NVML model {@code model}: spaces replaced by '-'. */
    public static String of(String model) {
        return model.replace(' ', '-');
    }

    /** A value with GFD's time-slicing suffix taken off: what it says of the GPUs' model. */
    public static String unshared(String value) {
        return value.endsWith(SHARED_SUFFIX) ? value.substring(0, value.length() - SHARED_SUFFIX.length()) : value;
    }
}
