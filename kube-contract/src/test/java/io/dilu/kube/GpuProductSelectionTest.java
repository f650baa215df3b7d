package io.dilu.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.NodeSelectorRequirement;
import io.fabric8.kubernetes.api.model.NodeSelectorRequirementBuilder;
import io.fabric8.kubernetes.api.model.NodeSelectorTerm;
import io.fabric8.kubernetes.api.model.NodeSelectorTermBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GpuProductSelectionTest {

    static final String A100 = "NVIDIA A100-SXM4-40GB";
    static final String V100 = "Tesla V100-SXM2-16GB";

    static NodeSelectorRequirement expr(String key, String operator, String... values) {
        return new NodeSelectorRequirementBuilder().withKey(key).withOperator(operator).withValues(values).build();
    }

    static NodeSelectorTerm term(NodeSelectorRequirement... expressions) {
        return new NodeSelectorTermBuilder().withMatchExpressions(expressions).build();
    }

    static Pod pod(Map<String, String> nodeSelector, NodeSelectorTerm... terms) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName("p").withNamespace("ns").endMetadata().withNewSpec()
                .withNodeSelector(nodeSelector).endSpec();
        if (terms.length > 0) {
            b.editSpec().withNewAffinity().withNewNodeAffinity().withNewRequiredDuringSchedulingIgnoredDuringExecution()
                    .withNodeSelectorTerms(terms).endRequiredDuringSchedulingIgnoredDuringExecution().endNodeAffinity()
                    .endAffinity().endSpec();
        }
        return b.build();
    }

    @Test
    void gfdSpellsNvmlNamesWithDashesForSpacesAndMayAddTheTimeSlicingSuffix() {
        // As NVIDIA's GPU feature discovery labels them (k8s-device-plugin internal/lm/resource.go, productLabel).
        assertThat(GpuProductLabel.of(A100)).isEqualTo("NVIDIA-A100-SXM4-40GB");
        assertThat(GpuProductLabel.of(V100)).isEqualTo("Tesla-V100-SXM2-16GB");
        assertThat(GpuProductLabel.of("NVIDIA H100 80GB HBM3")).isEqualTo("NVIDIA-H100-80GB-HBM3");
        assertThat(GpuProductLabel.unshared("NVIDIA-A100-SXM4-40GB-SHARED")).isEqualTo("NVIDIA-A100-SXM4-40GB");
    }

    @Test
    void requiredNodeAffinityInOnTheProductLabelSelectsThoseModels() {
        GpuProductSelection s = GpuProductSelection.of(pod(Map.of(),
                term(expr(GpuProductLabel.KEY, "In", "NVIDIA-A100-SXM4-40GB"), expr("topology.kubernetes.io/zone", "In", "a"))));
        assertThat(s.constrains()).isTrue();
        assertThat(s.acceptsModel(A100)).isTrue();
        assertThat(s.acceptsModel(V100)).isFalse();
        assertThat(s).hasToString("nvidia.com/gpu.product In [NVIDIA-A100-SXM4-40GB]");
    }

    @Test
    void aTimeSlicedLabelNamesTheSameModel() {
        GpuProductSelection s = GpuProductSelection.of(pod(Map.of(GpuProductLabel.KEY, "NVIDIA-A100-SXM4-40GB-SHARED")));
        assertThat(s.acceptsModel(A100)).isTrue();
        assertThat(s.acceptsModel(V100)).isFalse();
    }

    @Test
    void notInExcludesAndTheNodeSelectorHoldsBesideTheAffinity() {
        GpuProductSelection notV100 = GpuProductSelection.of(pod(Map.of(),
                term(expr(GpuProductLabel.KEY, "NotIn", "Tesla-V100-SXM2-16GB"))));
        assertThat(notV100.acceptsModel(A100)).isTrue();
        assertThat(notV100.acceptsModel(V100)).isFalse();
        assertThat(notV100.accepts("Tesla-V100-SXM2-16GB-SHARED")).as("time-sliced, still a V100").isFalse();

        GpuProductSelection both = GpuProductSelection.of(pod(Map.of(GpuProductLabel.KEY, "Tesla-V100-SXM2-16GB"),
                term(expr(GpuProductLabel.KEY, "In", "Tesla-V100-SXM2-16GB", "NVIDIA-A100-SXM4-40GB"))));
        assertThat(both.acceptsModel(V100)).isTrue();
        assertThat(both.acceptsModel(A100)).as("the nodeSelector narrows the affinity").isFalse();
    }

    @Test
    void termsAreAlternativesSoATermThatNamesNoProductLetsAnyGpuThrough() {
        GpuProductSelection two = GpuProductSelection.of(pod(Map.of(),
                term(expr(GpuProductLabel.KEY, "In", "NVIDIA-A100-SXM4-40GB")),
                term(expr(GpuProductLabel.KEY, "In", "Tesla-V100-SXM2-16GB"))));
        assertThat(two.acceptsModel(A100)).isTrue();
        assertThat(two.acceptsModel(V100)).isTrue();
        assertThat(two.acceptsModel("NVIDIA H100 80GB HBM3")).isFalse();

        GpuProductSelection open = GpuProductSelection.of(pod(Map.of(),
                term(expr(GpuProductLabel.KEY, "In", "NVIDIA-A100-SXM4-40GB")),
                term(expr("kubernetes.io/hostname", "In", "n7"))));
        assertThat(open.constrains()).as("nodes of the second term may have any GPU").isFalse();
        assertThat(open.acceptsModel(V100)).isTrue();
    }

    @Test
    void existsOtherKeysAndNoAffinitySelectNoProduct() {
        assertThat(GpuProductSelection.of(pod(Map.of())).constrains()).isFalse();
        assertThat(GpuProductSelection.of(pod(Map.of("kubernetes.io/hostname", "n1"))).constrains()).isFalse();
        assertThat(GpuProductSelection.of(pod(Map.of(), term(expr(GpuProductLabel.KEY, "Exists")))).constrains()).isFalse();
        assertThat(GpuProductSelection.of(new PodBuilder().build())).isSameAs(GpuProductSelection.ANY);
        // An empty term matches no node, so it brings no GPU of any model.
        assertThat(GpuProductSelection.of(pod(Map.of(), new NodeSelectorTerm(),
                term(expr(GpuProductLabel.KEY, "In", "Tesla-V100-SXM2-16GB")))).acceptsModel(A100)).isFalse();
        assertThat(GpuProductSelection.ANY.acceptsModel(A100)).isTrue();
    }
}
