package io.dilu.simulator;

import io.dilu.core.placement.NodeInventory;
import java.util.ArrayList;
import java.util.List;

/**
 * A homogeneous simulated cluster: {@code gpusPerNode} GPUs of {@code gpuMemoryMib} each per node, as
 * many nodes as the workload could need even on whole GPUs, so that only policies differ, never capacity.
 */
public record ClusterShape(int gpusPerNode, long gpuMemoryMib, String model) {

    public static final ClusterShape PAPER = new ClusterShape(4, 40 * 1024, "A100-40GB");

    public List<NodeInventory> nodesFor(List<SimInstance> instances) {
        long gpus = instances.stream().mapToLong(SimInstance::gpus).sum();
        return nodes((int) Math.ceil((double) gpus / gpusPerNode) + 8);
    }

    /** {@code count} nodes of this shape, named node-0000 on. */
    public List<NodeInventory> nodes(int count) {
        List<NodeInventory> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            out.add(NodeInventory.uniform(String.format("node-%04d", n), gpusPerNode, model, gpuMemoryMib, 108));
        }
        return out;
    }
}
