package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.tokens.TokenParameters;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Pods and the webhook's defaults for the admission tests. */
final class Pods {

    static final HookSettings HOOK = new HookSettings("/opt/dilu/lib", "libdilu-hook.so", "dilu-scheduler", Optional.empty());
    static final String NODE_AGENT = "system:serviceaccount:dilu-system:dilu-node-agent";
    static final String SCHEDULER = "system:serviceaccount:dilu-system:dilu-scheduler";
    static final String AUTOSCALER = "system:serviceaccount:dilu-system:dilu-autoscaler";
    static final double ETA_VIOLATION = TokenParameters.DEFAULTS.etaViolation();
    /** WebhookConfig's defaults. */
    static final AdmissionPolicy POLICY = new AdmissionPolicy(HOOK, shippedProtectedHostPaths(),
            List.of("/opt/dilu/lib", "/var/run/dilu", "/run/dilu", "/etc/ld.so.preload"), Set.of(SCHEDULER, NODE_AGENT),
            Set.of(AUTOSCALER, SCHEDULER), 3 * 1024 * 1024, 256, ETA_VIOLATION);

    private Pods() {}

    /** {@code dilu.webhook.protected-host-paths} as shipped: WebhookConfig's default, read where it is written. */
    private static List<String> shippedProtectedHostPaths() {
        try {
            return List.of(io.dilu.webhook.WebhookConfig.class.getMethod("protectedHostPaths")
                    .getAnnotation(io.smallrye.config.WithDefault.class).value().split(","));
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    static Map<String, Quantity> share(int sm, long memory) {
        return Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)), DiluNames.GPU_MEMORY, new Quantity(Long.toString(memory)));
    }

    static PodBuilder gpuPod(int sm, long memory) {
        return new PodBuilder().withNewMetadata().withName("fn").withNamespace("fns").endMetadata()
                .withNewSpec().addNewContainer().withName("server").withImage("registry.local/fn:1")
                .withNewResources().withLimits(share(sm, memory)).endResources().endContainer().endSpec();
    }

    /** A pod as the validating webhook sees it: after the mutating one. */
    static Pod mutated(Pod pod, boolean quotaRights) {
        return PodMutator.mutate(pod, Optional.empty(), HOOK, quotaRights, ETA_VIOLATION).pod();
    }
}
