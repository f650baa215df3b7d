package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.Map;

/** Pods for the admission tests. */
final class Pods {

    static final HookSettings HOOK = new HookSettings("/opt/dilu/lib", "/opt/dilu/lib", "libdilu-hook.so", "dilu-scheduler");

    private Pods() {}

    static PodBuilder gpuPod(int sm, long memory) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memory)));
        return new PodBuilder().withNewMetadata().withName("fn").withNamespace("fns").endMetadata()
                .withNewSpec().addNewContainer().withName("server").withImage("registry.local/fn:1")
                .withNewResources().withLimits(share).endResources().endContainer().endSpec();
    }
}
