package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.Apportion;
import io.dilu.core.placement.GpuDevice;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How shares lie on this node's GPUs: the order CUDA numbers them in a container (the node's), and each share's part
 * of each GPU it holds. Pure: what {@link Allocations} gives the token loops and the control block follows from an
 * allocation and the node's GPUs alone.
 *
 * @param gpus the node's GPUs, in its order
 */
public record ShareLayout(List<GpuDevice> gpus) {

    public ShareLayout {
        gpus = List.copyOf(gpus);
    }

    /**
     * A share's part of one GPU: device {@code d} of its control block. A container on one GPU has one; a
     * container split into pipeline stages has one per GPU, in the node's GPU order, its limit divided as the
     * scheduler divided it ({@link Apportion#stageLimits}) and its memory as its stages say.
     *
     * @param gpu the GPU's index on this node, -1 when the node has no such GPU
     */
    public record Device(int gpu, String uuid, int smRequest, int smLimit, long memoryMib) {}

    /** The GPU's index on this node, -1 when the node has no such GPU. */
    public int indexOf(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                return i;
            }
        }
        return -1;
    }

    /** {@code some} of this node's GPUs, in its order. */
    public List<GpuDevice> inOrder(Collection<GpuDevice> some) {
        return some.stream().sorted(Comparator.comparingInt(g -> indexOf(g.uuid()))).toList();
    }

    /** The share's parts, one per GPU its device IDs lie on, in the node's order (unknown GPUs last, by UUID). */
    public List<Device> devices(Allocation a) {
        Map<String, Integer> perGpu = new TreeMap<>(Comparator
                .comparingInt((String u) -> indexOf(u) < 0 ? Integer.MAX_VALUE : indexOf(u)).thenComparing(u -> u));
        a.deviceIds().forEach(id -> perGpu.merge(GpuSmDevicePlugin.gpuOf(id), 1, Integer::sum));
        if (perGpu.size() == 1) {
            return List.of(new Device(indexOf(a.gpu()), a.gpu(), a.smRequest(), a.smLimit(), a.memoryMib()));
        }
        Map<String, Long> stageMemory = a.quota().stageMemoryMib();
        long memoryStages = stageMemory.values().stream().mapToLong(Long::longValue).sum();
        boolean staged = stageMemory.keySet().equals(perGpu.keySet()) && memoryStages == a.memoryMib();
        int[] requests = perGpu.values().stream().mapToInt(Integer::intValue).toArray();
        // Weighed by each stage's memory where the pod's stages say it, as the scheduler divided the limit.
        long[] weights = perGpu.keySet().stream().mapToLong(g -> staged ? stageMemory.get(g) : perGpu.get(g)).toArray();
        int[] limits = Apportion.stageLimits(a.smLimit(), requests, weights);
        List<Device> out = new ArrayList<>();
        int i = 0;
        for (Map.Entry<String, Integer> e : perGpu.entrySet()) {
            long memory = staged ? stageMemory.get(e.getKey()) : Math.max(1, a.memoryMib() * e.getValue() / a.smRequest());
            out.add(new Device(indexOf(e.getKey()), e.getKey(), e.getValue(), limits[i++], memory));
        }
        return out;
    }
}
