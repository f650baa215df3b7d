package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.QuotaRights;
import io.dilu.kube.PodShare;
import io.dilu.kube.PodShares;
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
                        c.memoryMib().filter(m -> m >= 1).orElse(Allocation.DEFAULT_MEMORY_MIB))).toList();
        Map<String, String> annotations = meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
        return new PodView(meta.getNamespace(), meta.getName(), meta.getUid(), created, PodShares.terminal(pod), annotations,
                gpu, QuotaRights.granted(namespaceLabels));
    }
}
