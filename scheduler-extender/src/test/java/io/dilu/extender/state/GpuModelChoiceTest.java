package io.dilu.extender.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.NodeInventory;
import io.dilu.kube.GpuProductLabel;
import io.dilu.kube.GpuProductSelection;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GpuModelChoiceTest {

    static final String A100 = "NVIDIA A100-SXM4-40GB";
    static final String V100 = "Tesla V100-SXM2-16GB";

    static GpuDevice gpu(String uuid, int index, String model) {
        return A100.equals(model) ? new GpuDevice(uuid, index, model, 40_960, 108) : new GpuDevice(uuid, index, model, 16_384, 80);
    }

    static NodeInventory node(String name, String... models) {
        return new NodeInventory(name, java.util.stream.IntStream.range(0, models.length)
                .mapToObj(i -> gpu(name + "-" + i, i, models[i])).toList());
    }

    /** A pod with {@code nodeSelector: {nvidia.com/gpu.product: value}}. */
    static GpuProductSelection selecting(String value) {
        return GpuProductSelection.of(new PodBuilder().withNewSpec().withNodeSelector(Map.of(GpuProductLabel.KEY, value))
                .endSpec().build());
    }

    @Test
    void onNodesOfOneModelEachTheLabelHasChosenAndCoreGetsNoConstraint() {
        var choice = GpuModelChoice.of(selecting("NVIDIA-A100-SXM4-40GB"), 1,
                List.of(node("a100-0", A100, A100), node("a100-1", A100, A100)));
        assertThat(choice.gpuModels()).as("every offered GPU is of the model: nothing to add").isEmpty();
        assertThat(choice.refused()).isEmpty();
    }

    @Test
    void onANodeWithGpusOfSeveralModelsCoreMayUseOnlyTheSelectedOnes() {
        var choice = GpuModelChoice.of(selecting("NVIDIA-A100-SXM4-40GB"), 1,
                List.of(node("a100-0", A100, A100), node("mixed", V100, A100)));
        assertThat(choice.gpuModels()).containsExactly(A100);
        assertThat(choice.refused()).isEmpty();
    }

    @Test
    void aNodeWithoutEnoughGpusOfTheSelectedModelIsRefusedWithBothSpellings() {
        var choice = GpuModelChoice.of(selecting("Tesla-V100-SXM2-16GB"), 2,
                List.of(node("a100-0", A100, A100), node("mixed", V100, A100), node("v100-0", V100, V100)));
        assertThat(choice.refused()).containsOnlyKeys("a100-0", "mixed");
        assertThat(choice.refused().get("a100-0")).isEqualTo("none of the node's GPUs is of a product the pod selects "
                + "(nvidia.com/gpu.product In [Tesla-V100-SXM2-16GB]); dilu.io/gpu-inventory lists "
                + "NVIDIA A100-SXM4-40GB (NVIDIA-A100-SXM4-40GB)");
        assertThat(choice.refused().get("mixed")).startsWith("only 1 of the node's GPUs is of a product the pod selects")
                .contains("it needs 2");
        assertThat(choice.gpuModels()).as("the node left holds only V100s").isEmpty();
    }

    @Test
    void aPodThatSelectsNoProductIsNotConstrained() {
        assertThat(GpuModelChoice.of(GpuProductSelection.ANY, 1, List.of(node("mixed", V100, A100))))
                .isEqualTo(GpuModelChoice.ANY);
    }
}
