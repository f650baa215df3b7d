package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Reads a Kubernetes Pod into the agent's {@link PodView}. */
public final class PodViews {

    private PodViews() {}

    public static PodView of(Pod pod) {
        var meta = pod.getMetadata();
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        boolean terminal = meta.getDeletionTimestamp() != null || "Succeeded".equals(phase) || "Failed".equals(phase);
        Instant created = meta.getCreationTimestamp() == null ? Instant.EPOCH : Instant.parse(meta.getCreationTimestamp());
        List<PodView.GpuContainer> gpu = new ArrayList<>();
        if (pod.getSpec() != null) {
            for (Container c : pod.getSpec().getContainers()) {
                smRequest(c).ifPresent(sm -> gpu.add(new PodView.GpuContainer(c.getName(), sm)));
            }
        }
        Map<String, String> annotations = meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
        return new PodView(meta.getNamespace(), meta.getName(), meta.getUid(), created, terminal, annotations, gpu);
    }

    /** {@code dilu.io/gpu-sm} of a container; extended resources may be given as request, limit or both. */
    static Optional<Integer> smRequest(Container c) {
        if (c.getResources() == null) {
            return Optional.empty();
        }
        Quantity q = Optional.ofNullable(c.getResources().getRequests()).map(r -> r.get(DiluNames.GPU_SM))
                .or(() -> Optional.ofNullable(c.getResources().getLimits()).map(l -> l.get(DiluNames.GPU_SM)))
                .orElse(null);
        if (q == null) {
            return Optional.empty();
        }
        try {
            BigDecimal v = q.getNumericalAmount();
            return v.signum() > 0 && v.stripTrailingZeros().scale() <= 0 && v.compareTo(BigDecimal.valueOf(100)) <= 0
                    ? Optional.of(v.intValueExact()) : Optional.empty();
        } catch (ArithmeticException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }
}
