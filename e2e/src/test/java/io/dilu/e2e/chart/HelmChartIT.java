package io.dilu.e2e.chart;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart rendered for this API server's version ({@link RealApiServer#VERSION}) with every optional part on but
 * those whose kinds it lacks (ServiceMonitor, cert-manager's Issuer and Certificate): a real, RBAC-enforcing
 * kube-apiserver accepts every object in the order Helm renders them, the service accounts get what they need, and
 * the same release's kube-scheduler loads the rendered scheduler configuration.
 */
class HelmChartIT {

    private static RealApiServer api;

    @BeforeAll
    static void start() {
        api = RealApiServer.start();
    }

    @AfterAll
    static void stop() {
        if (api != null) {
            api.close();
        }
    }

    static String rendered() {
        return DiluChart.render(RealApiServer.VERSION, Map.of("namespace.create", "true",
                "monitoring.grafanaDashboard.enabled", "true", "emulation.enabled", "true",
                "nodeAgent.tokens.period", "5ms", "nodeAgent.tokens.refillSteps", "5",
                "image.pullSecrets[0].name", "registry"));
    }

    /** Whether the API server lets the service account {@code dilu-system/sa} do {@code verb} on a resource there. */
    private static boolean allowed(String sa, String verb, String group, String resource) {
        return api.allowed("dilu-system", sa, verb, group, resource);
    }

    @Test
    void theApiServerAcceptsEveryObjectInHelmsOrder() {
        List<HasMetadata> objects = api.client().load(new ByteArrayInputStream(rendered().getBytes(StandardCharsets.UTF_8))).items();
        // Helm's install order: the namespace first, the CRD before the RBAC and workloads that use it.
        assertThat(objects.getFirst().getKind()).isEqualTo("Namespace");
        assertThat(objects).extracting(HasMetadata::getKind).contains("CustomResourceDefinition", "DaemonSet", "Deployment",
                "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ConfigMap", "Service");
        // Knative Serving is installed first: the autoscaler's read of config-autoscaler is granted in its namespace.
        api.createNamespace(KnativeNames.SERVING_NAMESPACE, Map.of());
        for (HasMetadata o : objects) {
            HasMetadata created = api.client().resource(o).create();
            assertThat(created.getMetadata().getUid()).as("%s %s", o.getKind(), o.getMetadata().getName()).isNotBlank();
        }
        assertThat(api.client().namespaces().withName("dilu-system").get().getMetadata().getLabels())
                .containsEntry("dilu.io/webhook", "disabled");
        assertThat(allowed("dilu-scheduler", "create", "", "pods/binding")).as("the extender binds pods").isTrue();
        assertThat(allowed("dilu-scheduler", "patch", "", "pods")).as("and writes dilu.io/assigned-gpus").isTrue();
        assertThat(allowed("dilu-node-agent", "patch", "", "nodes")).as("the agent publishes the GPU inventory").isTrue();
        assertThat(allowed("dilu-webhook", "watch", "dilu.io", "gpufunctionprofiles")).isTrue();
        assertThat(allowed("dilu-autoscaler", "patch", "coordination.k8s.io", "leases")).isTrue();
        assertThat(allowed("dilu-autoscaler", "get", "", "secrets")).as("nothing beyond what it needs").isFalse();
        assertThat(api.grantedInNamespace(KnativeNames.SERVING_NAMESPACE, "dilu-system", "dilu-autoscaler", "watch", "", "configmaps"))
                .as("config-autoscaler, Knative's defaults").isTrue();
    }

    /** This release's kube-scheduler loads and validates the rendered configuration (--write-config-to writes it and exits). */
    @Test
    void theKubeSchedulerLoadsTheRenderedConfiguration(@TempDir Path dir) throws Exception {
        String config = (String) HelmChartTest.at(HelmChartTest.one(rendered(), "ConfigMap", "dilu-scheduler-config"),
                "data", "scheduler-config.yaml");
        assertThat(config).startsWith("apiVersion: kubescheduler.config.k8s.io/v1\n");
        // In a pod it talks to the API server through the in-cluster configuration; here through a kubeconfig.
        Path kubeconfig = api.writeKubeconfig(dir.resolve("kubeconfig"));
        Path file = Files.writeString(dir.resolve("scheduler-config.yaml"), "clientConnection:\n  kubeconfig: " + kubeconfig
                + "\n" + config);
        Path written = dir.resolve("written.yaml");
        Path log = dir.resolve("kube-scheduler.log");
        Process scheduler = new ProcessBuilder(RealApiServer.kubeScheduler().toString(), "--config=" + file,
                "--secure-port=0", "--write-config-to=" + written).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertThat(scheduler.waitFor(60, TimeUnit.SECONDS)).as("kube-scheduler exits").isTrue();
            assertThat(scheduler.exitValue()).as("its exit status; %s", Files.readString(log)).isZero();
        } finally {
            scheduler.destroyForcibly();
        }
        assertThat(Files.readString(written)).contains("schedulerName: dilu-scheduler", "urlPrefix: http://127.0.0.1:8082",
                "name: dilu.io/gpu-memory");
    }
}
