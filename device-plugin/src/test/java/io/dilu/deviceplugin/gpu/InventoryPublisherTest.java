package io.dilu.deviceplugin.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.util.List;
import org.junit.jupiter.api.Test;

@EnableKubernetesMockClient(crud = true)
class InventoryPublisherTest {

    KubernetesClient client;

    private final List<GpuDevice> gpus = EmulatedInventory.parse("node-a", "2x A100-40GB, 108 SMs").gpus();

    @Test
    void writesTheInventoryOnItsNodeAndTheExtenderCanReadItBack() {
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName("node-a").addToAnnotations("other", "kept")
                .endMetadata().build()).create();
        assertThat(new InventoryPublisher(client, "node-a").publish(gpus)).isTrue();
        var annotations = client.nodes().withName("node-a").get().getMetadata().getAnnotations();
        assertThat(annotations).containsEntry("other", "kept");
        assertThat(InventoryAnnotation.read(annotations.get(InventoryAnnotation.KEY))).isEqualTo(gpus);
    }

    @Test
    void aMissingNodeIsRetriedLaterNotAFailure() {
        assertThat(new InventoryPublisher(client, "not-yet").publish(gpus)).isFalse();
    }

    @Test
    void aMalformedAnnotationIsRefusedWithTheReason() {
        assertThatThrownBy(() -> InventoryAnnotation.read("[{\"uuid\":\"\",\"memoryMiB\":1,\"smCount\":1}]"))
                .hasMessageContaining("dilu.io/gpu-inventory is not a valid GPU inventory").hasMessageContaining("uuid");
        assertThatThrownBy(() -> InventoryAnnotation.read("{oops")).hasMessageContaining("not a valid GPU inventory");
    }
}
