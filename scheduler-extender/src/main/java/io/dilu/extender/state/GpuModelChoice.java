package io.dilu.extender.state;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.NodeInventory;
import io.dilu.kube.GpuProductLabel;
import io.dilu.kube.GpuProductSelection;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a pod's GPU product selection ({@code nvidia.com/gpu.product}) means for placement among the nodes the
 * scheduler offers: which of them have GPUs of a selected model, and the model constraint for core
 * ({@code InstanceRequest.gpuModels}) — only when some offered node also has GPUs of another model.
 *
 * <p>kube-scheduler has matched each node's label before offering it, so on a node whose GPUs are all of one
 * model the choice is made and a constraint would add nothing. On a node with GPUs of several models GFD labels
 * one of them (whichever it lists last: it warns "Multiple device types detected"), so the label chose the node
 * but not the GPU: the constraint makes core choose a GPU of the selected model there. A GPU's model is read from
 * the inventory (NVML's name, as the node agent writes it) and spelled as GFD spells it ({@link GpuProductLabel}).
 *
 * @param gpuModels the models core may use (inventory names), empty for any
 * @param refused the offered nodes without enough GPUs of a selected model, each with why
 */
record GpuModelChoice(Set<String> gpuModels, Map<String, String> refused) {

    static final GpuModelChoice ANY = new GpuModelChoice(Set.of(), Map.of());

    /**
     * @param gpus how many GPUs the pod needs on one node
     * @param nodes the offered nodes that publish an inventory
     */
    static GpuModelChoice of(GpuProductSelection selection, int gpus, Collection<NodeInventory> nodes) {
        if (!selection.constrains()) {
            return ANY;
        }
        Set<String> accepted = new TreeSet<>();
        Map<String, String> refused = new TreeMap<>();
        boolean restricts = false;
        for (NodeInventory node : nodes) {
            List<GpuDevice> of = node.gpus().stream().filter(g -> selection.acceptsModel(g.model())).toList();
            if (of.size() < gpus) {
                refused.put(node.name(), why(selection, gpus, node, of.size()));
                continue;
            }
            of.forEach(g -> accepted.add(g.model()));
            restricts |= of.size() < node.gpus().size();
        }
        return new GpuModelChoice(restricts ? accepted : Set.of(), refused);
    }

    private static String why(GpuProductSelection selection, int gpus, NodeInventory node, int of) {
        Set<String> models = new TreeSet<>();
        node.gpus().forEach(g -> models.add(g.model() + " (" + GpuProductLabel.of(g.model()) + ")"));
        String what = of == 0 ? "none of the node's GPUs is"
                : "only " + of + " of the node's GPUs " + (of == 1 ? "is" : "are");
        return what + " of a product the pod selects (" + selection + ")" + (of == 0 ? "" : "; it needs " + gpus)
                + "; dilu.io/gpu-inventory lists " + String.join(", ", models);
    }
}
