package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.dsl.MixedOperation;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceList;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The GpuFunctionProfile CRD on a real kube-apiserver: installed, created, watched, and bad quotas refused. */
class GpuFunctionProfileCrdIT {

    private static final String CRD = "gpufunctionprofiles.dilu.io";
    private static RealApiServer api;

    @BeforeAll
    static void startApiServerAndInstallCrd() throws Exception {
        api = RealApiServer.start();
        api.installCrd(RealApiServer.manifests().resolve("crds").resolve(CRD + ".yaml"));
    }

    @AfterAll
    static void stop() {
        if (api != null) {
            api.close();
        }
    }

    private static MixedOperation<GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>> profiles() {
        return api.client().genericKubernetesResources("dilu.io/v1alpha1", "GpuFunctionProfile");
    }

    private static GenericKubernetesResource profile(String name, Map<String, Object> spec) {
        return new GenericKubernetesResourceBuilder()
                .withApiVersion("dilu.io/v1alpha1").withKind("GpuFunctionProfile")
                .withNewMetadata().withName(name).withNamespace("default").endMetadata()
                .withAdditionalProperties(Map.of("spec", spec))
                .build();
    }

    private record Event(Watcher.Action action, GenericKubernetesResource resource) {}

    @Test
    void aProfileIsCreatedWatchedAndUpdated() throws Exception {
        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        try (Watch ignored = profiles().inNamespace("default").withName("resnet152").watch(new Watcher<>() {
            @Override
            public void eventReceived(Action action, GenericKubernetesResource resource) {
                events.add(new Event(action, resource));
            }

            @Override
            public void onClose(WatcherException cause) {
                // the test closes the watch itself
            }
        })) {
            profiles().inNamespace("default").resource(profile("resnet152", Map.of(
                    "function", "resnet152", "type", "inference", "smRequest", 30, "smLimit", 60,
                    "memoryMiB", 4096, "batchSize", 8, "priority", "slo", "servingThroughputRps", 220.5,
                    "servingThroughputRpsAtLimit", 391.5,
                    "trials", List.of(Map.of("smPercent", 30, "batchSize", 8, "latencyMillis", 36.2, "throughput", 220.5)))))
                    .create();

            Event added = events.poll(30, TimeUnit.SECONDS);
            assertThat(added).isNotNull();
            assertThat(added.action()).isEqualTo(Watcher.Action.ADDED);
            Map<String, Object> spec = spec(added.resource());
            assertThat(spec).containsEntry("function", "resnet152").containsEntry("smRequest", 30)
                    .containsEntry("smLimit", 60).containsEntry("memoryMiB", 4096).containsEntry("gpus", 1)
                    .containsEntry("servingThroughputRpsAtLimit", 391.5);
            assertThat(spec.get("trials")).asList().hasSize(1);

            profiles().inNamespace("default").withName("resnet152")
                    .edit(r -> { spec(r).put("smLimit", 80); return r; });
            Event modified = events.poll(30, TimeUnit.SECONDS);
            assertThat(modified).isNotNull();
            assertThat(modified.action()).isEqualTo(Watcher.Action.MODIFIED);
            assertThat(spec(modified.resource())).containsEntry("smLimit", 80);
        }
    }

    @Test
    void theSchemaRefusesNegativeAndOutOfRangeQuotas() {
        assertRefused("neg-request", Map.of("function", "f", "smRequest", -10, "memoryMiB", 1024), "spec.smRequest");
        assertRefused("neg-memory", Map.of("function", "f", "smRequest", 10, "memoryMiB", -1), "spec.memoryMiB");
        assertRefused("big-limit", Map.of("function", "f", "smRequest", 10, "smLimit", 150, "memoryMiB", 1), "spec.smLimit");
        assertRefused("zero-batch", Map.of("function", "f", "smRequest", 10, "memoryMiB", 1, "batchSize", 0), "spec.batchSize");
        assertRefused("neg-rps-at-limit", Map.of("function", "f", "smRequest", 10, "memoryMiB", 1,
                "servingThroughputRpsAtLimit", -1), "spec.servingThroughputRpsAtLimit");
        assertRefused("huge-rps-at-limit", Map.of("function", "f", "smRequest", 10, "memoryMiB", 1,
                "servingThroughputRpsAtLimit", 2e7), "spec.servingThroughputRpsAtLimit");
        assertThat(profiles().inNamespace("default").list().getItems())
                .extracting(r -> r.getMetadata().getName())
                .doesNotContain("neg-request", "neg-memory", "big-limit", "zero-batch", "neg-rps-at-limit", "huge-rps-at-limit");
    }

    private static void assertRefused(String name, Map<String, Object> spec, String field) {
        assertThatThrownBy(() -> profiles().inNamespace("default").resource(profile(name, spec)).create())
                .isInstanceOf(KubernetesClientException.class)
                .satisfies(e -> {
                    assertThat(((KubernetesClientException) e).getCode()).isEqualTo(422);
                    assertThat(e.getMessage()).contains(field);
                });
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> spec(GenericKubernetesResource r) {
        return (Map<String, Object>) r.getAdditionalProperties().get("spec");
    }
}
