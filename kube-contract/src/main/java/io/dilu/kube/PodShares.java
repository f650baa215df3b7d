package io.dilu.kube;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/** Reads a Kubernetes Pod's GPU shares into a {@link PodShare}. */
public final class PodShares {

    /** Labels that name a function when {@code dilu.io/function} does not, most specific first. */
    static final List<String> FUNCTION_LABELS = java.util.stream.Stream.concat(KnativeNames.SERVING_LABELS.stream(),
            java.util.stream.Stream.of("app.kubernetes.io/name", "app")).toList();

    private PodShares() {}

    /** The pod's share, or empty when it asks for no {@code dilu.io} resource. */
    public static Optional<PodShare> of(Pod pod) {
        List<PodShare.Container> containers = new ArrayList<>();
        if (pod.getSpec() != null && pod.getSpec().getContainers() != null) {
            for (Container c : pod.getSpec().getContainers()) {
                Optional<Quantity> sm = resource(c, DiluNames.GPU_SM);
                Optional<Quantity> memory = resource(c, DiluNames.GPU_MEMORY);
                if (sm.isPresent() || memory.isPresent()) {
                    // Out of range is -1, never a cast: 4294967346 must not become 50.
                    long percent = sm.map(PodShares::integer).orElse(-1L);
                    containers.add(new PodShare.Container(c.getName(), percent >= 1 && percent <= 100 ? (int) percent : -1,
                            memory.map(PodShares::integer)));
                }
            }
        }
        if (containers.isEmpty()) {
            return Optional.empty();
        }
        var meta = pod.getMetadata();
        Map<String, String> annotations = meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
        Optional<String> node = Optional.ofNullable(pod.getSpec().getNodeName()).filter(n -> !n.isBlank());
        // Keyed within the namespace: a tenant who names a function as another tenant's is not taken for its replicas.
        return Optional.of(new PodShare(meta.getUid(), meta.getNamespace(), meta.getName(), node, terminal(pod),
                meta.getNamespace() + "/" + function(pod), annotations, containers, servingGate(pod), kept(pod)));
    }

    /** Whether the pod declares a readiness gate on {@link DiluNames#SERVING_CONDITION}. */
    public static boolean servingGate(Pod pod) {
        return pod.getSpec() != null && pod.getSpec().getReadinessGates() != null && pod.getSpec().getReadinessGates()
                .stream().anyMatch(g -> DiluNames.SERVING_CONDITION.equals(g.getConditionType()));
    }

    /** Whether the pod's {@link DiluNames#SERVING_CONDITION} condition is True. */
    public static boolean serving(Pod pod) {
        return servingConditions(pod).anyMatch(c -> "True".equals(c.getStatus()));
    }

    /**
     * Whether the pod's {@link DiluNames#SERVING_CONDITION} condition is True with {@link DiluNames#SERVING_KEPT_REASON}:
     * the autoscaler keeps it in the request path as the last instance of a revision that may not reach zero.
     */
    public static boolean kept(Pod pod) {
        return servingConditions(pod).anyMatch(c -> "True".equals(c.getStatus())
                && DiluNames.SERVING_KEPT_REASON.equals(c.getReason()));
    }

    private static Stream<PodCondition> servingConditions(Pod pod) {
        return pod.getStatus() == null || pod.getStatus().getConditions() == null ? Stream.empty()
                : pod.getStatus().getConditions().stream().filter(c -> DiluNames.SERVING_CONDITION.equals(c.getType()));
    }

    /**
     * Holds no GPU share any more: finished, or deleted with nothing left running — never bound, or its containers
     * all ended. A deleted pod's containers run on for its grace period, which a tenant sets (issue 45: 86,400 s), and
     * hold their GPU memory and SMs while they do; so a pod being deleted keeps its booking until the kubelet says
     * they ended or the pod is gone.
     */
    public static boolean terminal(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
            return true;
        }
        if (pod.getMetadata().getDeletionTimestamp() == null) {
            return false;
        }
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        return node == null || node.isBlank() || containersEnded(pod);
    }

    /** Every container and init container the pod declares has a status, and each is terminated. */
    private static boolean containersEnded(Pod pod) {
        var spec = pod.getSpec();
        var status = pod.getStatus();
        if (status == null) {
            return false;
        }
        int declared = spec.getContainers().size() + (spec.getInitContainers() == null ? 0 : spec.getInitContainers().size());
        List<ContainerStatus> seen = new ArrayList<>();
        Optional.ofNullable(status.getContainerStatuses()).ifPresent(seen::addAll);
        Optional.ofNullable(status.getInitContainerStatuses()).ifPresent(seen::addAll);
        return seen.size() == declared && seen.stream().allMatch(c -> c.getState() != null
                && c.getState().getTerminated() != null && c.getState().getRunning() == null);
    }

    /** {@code dilu.io/function}, else the Knative/KServe/app label, else the pod's name. */
    public static String function(Pod pod) {
        var meta = pod.getMetadata();
        String annotated = meta.getAnnotations() == null ? null : meta.getAnnotations().get(DiluNames.FUNCTION);
        if (annotated != null && !annotated.isBlank()) {
            return annotated;
        }
        Map<String, String> labels = meta.getLabels() == null ? Map.of() : meta.getLabels();
        for (String label : FUNCTION_LABELS) {
            String value = labels.get(label);
            if (value != null && !value.isBlank()) {
                return value;
            }
        }
        return meta.getName() != null ? meta.getName() : String.valueOf(meta.getGenerateName());
    }

    /** Extended resources may be given as request, limit or both (then equal). */
    private static Optional<Quantity> resource(Container c, String name) {
        if (c.getResources() == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(c.getResources().getRequests()).map(r -> r.get(name))
                .or(() -> Optional.ofNullable(c.getResources().getLimits()).map(l -> l.get(name)));
    }

    /** Largest whole quantity read: far above any GPU share (MiB of memory included), far below a long's range. */
    public static final long MAX_QUANTITY = 1L << 40;

    /**
     * A whole, positive quantity up to {@link #MAX_QUANTITY}, or -1: extended resources are integers. The text is
     * looked at before any arithmetic, so that a tenant's {@code 1e999999999} costs nothing to refuse.
     */
    public static long integer(Quantity q) {
        String amount = q.getAmount();
        String format = q.getFormat() == null ? "" : q.getFormat();
        if (amount == null || amount.length() > 20 || format.length() > 4 || !amount.matches("[0-9]+(\\.[0-9]+)?")) {
            return -1;
        }
        try {
            BigDecimal v = q.getNumericalAmount();
            return v.signum() > 0 && v.stripTrailingZeros().scale() <= 0 && v.compareTo(BigDecimal.valueOf(MAX_QUANTITY)) <= 0
                    ? v.longValueExact() : -1;
        } catch (ArithmeticException | IllegalArgumentException e) {
            return -1;
        }
    }
}
