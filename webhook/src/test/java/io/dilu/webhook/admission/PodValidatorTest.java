package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class PodValidatorTest {

    static final PodValidator.Facts FACTS = new PodValidator.Facts(OptionalLong.of(40_960), false);

    static List<String> errors(Pod pod) {
        return PodValidator.validate(pod, FACTS).stream().map(FieldError::message).toList();
    }

    @Test
    void aSensiblePodPasses() {
        assertThat(errors(Pods.gpuPod(30, 2048).build())).isEmpty();
    }

    @Test
    void eachImpossibleShareIsNamedWithItsRange() {
        assertThat(errors(Pods.gpuPod(0, 2048).build())).containsExactly(
                "spec.containers[0](server).resources[dilu.io/gpu-sm]=0 is not allowed: must be an integer percent in 1..100");
        assertThat(errors(Pods.gpuPod(101, 2048).build())).singleElement().asString().contains("=101").contains("1..100");
        assertThat(errors(Pods.gpuPod(30, 50_000).build())).containsExactly(
                "spec.containers[0](server).resources[dilu.io/gpu-memory]=50000 is not allowed: must be an integer MiB in 1..40960 (the largest GPU in the cluster)");
        assertThat(errors(Pods.gpuPod(30, 0).build())).singleElement().asString().contains("gpu-memory]=0");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.SM_LIMIT, "20")).endMetadata().build()))
                .containsExactly("dilu.io/sm-limit=20 is not allowed: must be an integer percent in 30..100 (request..100)");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.SM_LIMIT, "120")).endMetadata().build()))
                .singleElement().asString().contains("sm-limit=120");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.BATCH_SIZE, "0")).endMetadata().build()))
                .containsExactly("dilu.io/batch-size=0 is not allowed: must be an integer of at least 1");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.PRIORITY, "high")).endMetadata().build()))
                .containsExactly("dilu.io/priority=high is not allowed: must be one of slo, best-effort");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.KLC_THRESHOLD, "0.8")).endMetadata().build()))
                .containsExactly("dilu.io/klc-threshold=0.8 is not allowed: must be a ratio in (1, 10], e.g. 1.6");
        assertThat(errors(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.LLM, "yes")).endMetadata().build()))
                .containsExactly("dilu.io/llm=yes is not allowed: must be true or false");
    }

    @Test
    void wholeGpusBesideAShareAndPrivilegedContainersAreRefused() {
        Pod both = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().editResources()
                .addToLimits("nvidia.com/gpu", new Quantity("1")).endResources().endContainer().endSpec().build();
        assertThat(errors(both)).singleElement().asString().contains("[nvidia.com/gpu]=1").contains("not both");
        Pod privileged = Pods.gpuPod(30, 1024).editSpec().editFirstContainer().withNewSecurityContext().withPrivileged(true)
                .endSecurityContext().endContainer().endSpec().build();
        assertThat(errors(privileged)).singleElement().asString().contains("securityContext.privileged=true")
                .contains("dilu.io/allow-privileged=true");
        assertThat(PodValidator.validate(privileged, new PodValidator.Facts(OptionalLong.of(40_960), true))).isEmpty();
    }
}
