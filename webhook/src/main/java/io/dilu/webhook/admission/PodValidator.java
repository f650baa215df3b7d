package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.quota.FieldError;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Every reason a pod's GPU share is impossible or unsafe, each naming the field and what would be accepted.
 * A pure function of the pod and the few cluster facts it needs.
 */
public final class PodValidator {

    private PodValidator() {}

    /**
     * What the validator needs to know beyond the pod.
     *
     * @param largestGpuMemoryMib the largest GPU memory any node reports, when known
     * @param privilegedAllowed the pod's namespace lets privileged containers have GPU shares
     */
    public record Facts(OptionalLong largestGpuMemoryMib, boolean privilegedAllowed) {}

    public static List<FieldError> validate(Pod pod, Facts facts) {
        List<FieldError> errors = new ArrayList<>();
        List<Container> containers = pod.getSpec() == null ? List.of() : pod.getSpec().getContainers();
        int largestRequest = 0;
        boolean anyShare = false;
        for (int i = 0; i < containers.size(); i++) {
            Container c = containers.get(i);
            String at = "spec.containers[" + i + "](" + c.getName() + ").resources";
            Quantity sm = resource(c, DiluNames.GPU_SM);
            Quantity memory = resource(c, DiluNames.GPU_MEMORY);
            if (sm == null && memory == null) {
                continue;
            }
            anyShare = true;
            if (sm == null) {
                errors.add(new FieldError(at + "[" + DiluNames.GPU_SM + "]", "missing",
                        "an integer percent in 1..100 (" + DiluNames.GPU_MEMORY + " needs a share of the SMs)"));
            } else {
                long v = whole(sm);
                if (v < 1 || v > 100) {
                    errors.add(new FieldError(at + "[" + DiluNames.GPU_SM + "]", shown(sm), "an integer percent in 1..100"));
                } else {
                    largestRequest = Math.max(largestRequest, (int) v);
                }
            }
            if (memory != null) {
                long v = whole(memory);
                long max = facts.largestGpuMemoryMib().orElse(Long.MAX_VALUE);
                if (v < 1 || v > max) {
                    errors.add(new FieldError(at + "[" + DiluNames.GPU_MEMORY + "]", shown(memory),
                            facts.largestGpuMemoryMib().isPresent()
                                    ? "an integer MiB in 1.." + max + " (the largest GPU in the cluster)"
                                    : "an integer MiB of at least 1"));
                }
            }
            if (resource(c, "nvidia.com/gpu") != null) {
                errors.add(new FieldError(at + "[nvidia.com/gpu]", shown(resource(c, "nvidia.com/gpu")),
                        "absent: a container takes either a Dilu share (" + DiluNames.GPU_SM + ") or whole GPUs, not both"));
            }
            boolean privileged = c.getSecurityContext() != null && Boolean.TRUE.equals(c.getSecurityContext().getPrivileged());
            if (privileged && !facts.privilegedAllowed()) {
                errors.add(new FieldError("spec.containers[" + i + "](" + c.getName() + ").securityContext.privileged", "true",
                        "false for a container with a GPU share (a privileged container can bypass the hook); "
                                + "label the namespace dilu.io/allow-privileged=true to allow it"));
            }
        }
        if (anyShare) {
            Map<String, String> annotations = pod.getMetadata() == null || pod.getMetadata().getAnnotations() == null
                    ? Map.of() : pod.getMetadata().getAnnotations();
            errors.addAll(PodQuotaAnnotations.validate(annotations, Math.max(1, largestRequest)));
        }
        return errors;
    }

    private static Quantity resource(Container c, String name) {
        if (c.getResources() == null) {
            return null;
        }
        Quantity limit = c.getResources().getLimits() == null ? null : c.getResources().getLimits().get(name);
        return limit != null ? limit
                : c.getResources().getRequests() == null ? null : c.getResources().getRequests().get(name);
    }

    /** As the user wrote the number (the API server stores 50000 as "50k"). */
    private static String shown(Quantity q) {
        try {
            return q.getNumericalAmount().stripTrailingZeros().toPlainString();
        } catch (ArithmeticException | IllegalArgumentException e) {
            return q.toString();
        }
    }

    private static long whole(Quantity q) {
        return PodShares.integer(q);
    }
}
