package io.dilu.kube;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.fabric8.kubernetes.api.model.Node;
import java.util.List;

/**
 * The {@code dilu.io/gpu-inventory} Node annotation: a JSON list of the node's GPUs, the contract between
 * the node agent (writer) and the scheduler extender (reader).
 * {@code [{"uuid":"GPU-…","index":0,"model":"A100-40GB","memoryMiB":40960,"smCount":108}, …]}
 */
public final class InventoryAnnotation {

    public static final String KEY = DiluNames.GPU_INVENTORY;
    private static final ObjectMapper JSON = new ObjectMapper();

    private record Entry(String uuid, int index, String model, long memoryMiB, int smCount) {}

    private InventoryAnnotation() {}

    public static String write(List<GpuDevice> gpus) {
        try {
            return JSON.writeValueAsString(gpus.stream()
                    .map(g -> new Entry(g.uuid(), g.index(), g.model(), g.memoryMib(), g.smCount())).toList());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write the GPU inventory", e);
        }
    }

    /** Reads an annotation; a malformed one is refused with what was wrong. */
    public static List<GpuDevice> read(String json) {
        try {
            return JSON.readValue(json, new TypeReference<List<Entry>>() {}).stream()
                    .map(e -> new GpuDevice(e.uuid(), e.index(), e.model(), e.memoryMiB(), e.smCount())).toList();
        } catch (JsonProcessingException | IllegalArgumentException e) {
            throw new IllegalArgumentException(KEY + " is not a valid GPU inventory: " + e.getMessage(), e);
        }
    }

    /**
     * A node's GPUs for readers that only look (the largest GPU, a GPU's model): none when the node has no
     * inventory or a malformed one, which its agent reports and fixes.
     */
    public static List<GpuDevice> ofNode(Node node) {
        String inventory = node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(KEY);
        try {
            return inventory == null ? List.of() : read(inventory);
        } catch (IllegalArgumentException e) {
            return List.of();
        }
    }
}
