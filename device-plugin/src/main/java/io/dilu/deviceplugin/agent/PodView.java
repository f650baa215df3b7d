package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.quota.Quota;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the node agent needs to know of a pod on its node, independent of the Kubernetes client.
 *
 * @param created creation time: among pods that could own a new share, the oldest was admitted first
 * @param terminal the pod has finished or is being deleted: it takes no new share
 * @param gpuContainers the containers that request {@code dilu.io/gpu-sm}, in the pod's container order
 * @param sloRight its namespace has the right to SLO priority and quotas above the defaults
 *     ({@code dilu.io/allow-slo=true}, see {@code QuotaRights})
 * @param containerIds the runtime's ID of each running or ended container, init and ephemeral ones included, to
 *     its name (from the pod's status): how the backstop tells which container a process on a GPU is in
 */
public record PodView(String namespace, String name, String uid, Instant created, boolean terminal,
        Map<String, String> annotations, List<GpuContainer> gpuContainers, boolean sloRight,
        Map<String, String> containerIds) {

    public PodView {
        annotations = Map.copyOf(annotations);
        gpuContainers = List.copyOf(gpuContainers);
        containerIds = Map.copyOf(containerIds);
    }

    /** A pod whose containers' runtime IDs are not known (not started yet, or not needed). */
    public PodView(String namespace, String name, String uid, Instant created, boolean terminal,
            Map<String, String> annotations, List<GpuContainer> gpuContainers, boolean sloRight) {
        this(namespace, name, uid, created, terminal, annotations, gpuContainers, sloRight, Map.of());
    }

    /** A container's SM request in percent, and its GPU memory in MiB. */
    public record GpuContainer(String name, int smRequest, long memoryMib) {

        /** A container that does not say its memory gets what the scheduler extender books for it. */
        public GpuContainer(String name, int smRequest) {
            this(name, smRequest, Quota.DEFAULT_MEMORY_MIB);
        }
    }

    /** The GPU container of that name. */
    public Optional<GpuContainer> container(String name) {
        return gpuContainers.stream().filter(c -> c.name().equals(name)).findFirst();
    }

    public ContainerRef.PodKey key() {
        return new ContainerRef.PodKey(namespace, name);
    }

    public ContainerRef ref(GpuContainer container) {
        return new ContainerRef(namespace, name, container.name());
    }

    /** The scheduler's assignment, when the annotation is there and well-formed. */
    public Optional<AssignedGpus> assigned() {
        return AssignedGpus.from(annotations);
    }

    /** The GPU the scheduler assigned to the {@code index}-th GPU container. */
    public Optional<String> assignedGpu(int index) {
        return assigned().flatMap(a -> a.forContainer(index));
    }
}
