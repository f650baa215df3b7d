package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PodMutatorTest {

    static String env(Container c, String name) {
        return c.getEnv().stream().filter(e -> e.getName().equals(name)).findFirst()
                .map(e -> e.getValue() != null ? e.getValue() : e.getValueFrom().getFieldRef().getFieldPath()).orElse(null);
    }

    @Test
    void aGpuPodGetsTheHookItsIdentityTheSchedulerAndDefaults() {
        Pod pod = Pods.gpuPod(30, 2048).editMetadata().withLabels(Map.of("serving.knative.dev/service", "resnet")).endMetadata().build();
        Pod m = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK);
        Container c = m.getSpec().getContainers().getFirst();
        assertThat(env(c, "LD_PRELOAD")).isEqualTo("/opt/dilu/lib/libdilu-hook.so");
        assertThat(env(c, "DILU_POD_UID")).isEqualTo("metadata.uid");
        assertThat(env(c, "DILU_POD_NAMESPACE")).isEqualTo("metadata.namespace");
        assertThat(c.getVolumeMounts()).singleElement().satisfies(v -> {
            assertThat(v.getMountPath()).isEqualTo("/opt/dilu/lib");
            assertThat(v.getReadOnly()).isTrue();
        });
        assertThat(m.getSpec().getVolumes()).singleElement().satisfies(v -> assertThat(v.getHostPath().getPath()).isEqualTo("/opt/dilu/lib"));
        assertThat(m.getSpec().getSchedulerName()).isEqualTo("dilu-scheduler");
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "resnet");
        assertThat(pod.getSpec().getContainers().getFirst().getEnv()).as("the original is left alone").isEmpty();
    }

    @Test
    void mutatingTwiceChangesNothingMoreAndUserChoicesStay() {
        Pod pod = Pods.gpuPod(70, 2048).editMetadata().withAnnotations(Map.of(DiluNames.SM_LIMIT, "80")).endMetadata()
                .editSpec().withSchedulerName("my-scheduler").editFirstContainer()
                .addToEnv(new EnvVar("LD_PRELOAD", "/usr/lib/libtcmalloc.so", null)).endContainer().endSpec().build();
        Pod once = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK);
        assertThat(PodMutator.mutate(once, Optional.empty(), Pods.HOOK)).isEqualTo(once);
        assertThat(env(once.getSpec().getContainers().getFirst(), "LD_PRELOAD"))
                .isEqualTo("/opt/dilu/lib/libdilu-hook.so:/usr/lib/libtcmalloc.so");
        assertThat(once.getSpec().getSchedulerName()).isEqualTo("my-scheduler");
        assertThat(once.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "80")
                .containsEntry(DiluNames.PRIORITY, "best-effort");
    }

    @Test
    void aPodWithoutAShareIsNotTouched() {
        Pod plain = new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec().addNewContainer()
                .withName("c").withImage("nginx").endContainer().endSpec().build();
        assertThat(PodMutator.concerns(plain)).isFalse();
        assertThat(PodMutator.mutate(plain, Optional.empty(), Pods.HOOK)).isEqualTo(plain);
    }

    @Test
    void aProfileFillsWhatThePodLeavesOut() {
        Pod pod = new PodBuilder().withNewMetadata().withName("bert-1").withAnnotations(Map.of(PodMutator.PROFILE, "bert"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("bert").endContainer().endSpec().build();
        ProfileSpec bert = new ProfileSpec("bert", 25, Optional.of(45), 6144, Optional.of(8), Optional.of("slo"));
        Pod m = PodMutator.mutate(pod, Optional.of(bert), Pods.HOOK);
        var limits = m.getSpec().getContainers().getFirst().getResources().getLimits();
        assertThat(limits.get(DiluNames.GPU_SM).toString()).isEqualTo("25");
        assertThat(limits.get(DiluNames.GPU_MEMORY).toString()).isEqualTo("6144");
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "45").containsEntry(DiluNames.BATCH_SIZE, "8")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "bert");
    }

    @Test
    void anLlmProfileMarksItsPodsAndCarriesItsThreshold() {
        Pod pod = new PodBuilder().withNewMetadata().withName("llama-1").withAnnotations(Map.of(PodMutator.PROFILE, "llama"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("llama").endContainer().endSpec().build();
        ProfileSpec llama = new ProfileSpec("llama", 40, Optional.of(80), 30_000, Optional.of(1), Optional.of("slo"), true,
                Optional.of(1.25));
        Pod m = PodMutator.mutate(pod, Optional.of(llama), Pods.HOOK);
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.LLM, "true")
                .containsEntry(DiluNames.KLC_THRESHOLD, "1.25");
        assertThat(io.dilu.core.contract.PodQuotaAnnotations.klcThreshold(m.getMetadata().getAnnotations())).isEqualTo(1.25);
    }
}
