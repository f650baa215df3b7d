package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.QuotaRights;
import io.dilu.core.quota.Quota;
import io.dilu.kube.PodShare;
import io.dilu.kube.PodShares;
import io.dilu.deviceplugin.backstop.Cgroups;
import io.fabric8.kubernetes.api.model.Pod;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Reads a Kubernetes Pod into the agent's {@link PodView}. */
public final class PodViews {

    private PodViews() {}

    /** @param namespaceLabels the labels of the pod's namespace, for its rights; null when not known */
    public static PodView of(Pod pod, Map<String, String> namespaceLabels) {
        var meta = pod.getMetadata();
        Instant created = meta.getCreationTimestamp() == null ? Instant.EPOCH : Instant.parse(meta.getCreationTimestamp());
        List<PodView.GpuContainer> gpu = PodShares.of(pod).map(PodShare::containers).orElse(List.of()).stream()
                .filter(c -> c.smPercent() >= 1 && c.smPercent() <= 100)
                .map(c -> new PodView.GpuContainer(c.name(), c.smPercent(),
                        c.memoryMib().filter(m -> m >= 1).orElse(Quota.DEFAULT_MEMORY_MIB))).toList();
        Map<String, String> annotations = meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
        return new PodView(meta.getNamespace(), meta.getName(), meta.getUid(), created, PodShares.terminal(pod), annotations,
                gpu, QuotaRights.granted(namespaceLabels), containerIds(pod));
    }

    /** Runtime container ID → container name, of every container the status names (init and ephemeral too). */
    static Map<String, String> containerIds(Pod pod) {
        Map<String, String> ids = new java.util.HashMap<>();
        if (pod.getStatus() == null) {
            return ids;
        }
        java.util.stream.Stream.of(pod.getStatus().getContainerStatuses(), pod.getStatus().getInitContainerStatuses(),
                        pod.getStatus().getEphemeralContainerStatuses())
                .filter(java.util.Objects::nonNull).flatMap(List::stream).forEach(s -> {
                    Cgroups.fromStatus(s.getContainerID()).ifPresent(id -> ids.put(id, s.getName()));
                    // The container before its latest restart may still have processes on the GPU.
                    if (s.getLastState() != null && s.getLastState().getTerminated() != null) {
                        Cgroups.fromStatus(s.getLastState().getTerminated().getContainerID())
                                .ifPresent(id -> ids.putIfAbsent(id, s.getName()));
                    }
                });
        return ids;
    }
}
