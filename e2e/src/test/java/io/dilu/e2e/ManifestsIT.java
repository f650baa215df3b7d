package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every manifest under {@code manifests/} (but the examples, which need Knative and KServe — the KServe ones are
 * checked against KServe's CRD by {@link KServeExamplesIT} — and cert-manager's objects) is accepted by a real kube-apiserver: schemas, references between objects, admission (e.g. the
 * priority class exists).
 */
class ManifestsIT {

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

    /** Namespaces and CRDs before what lives in them. */
    private static final Map<String, Integer> ORDER = Map.of("Namespace", 0, "CustomResourceDefinition", 1);

    static List<HasMetadata> load() throws IOException {
        List<HasMetadata> all = new ArrayList<>();
        try (Stream<Path> files = Files.walk(RealApiServer.manifests())) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml"))
                    .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
                    .filter(p -> !RealApiServer.manifests().relativize(p).startsWith("examples")).sorted().toList()) {
                try (InputStream in = Files.newInputStream(f)) {
                    all.addAll(api.client().load(in).items());
                }
            }
        }
        // cert-manager's kinds need cert-manager, which this API server does not have.
        all.removeIf(o -> o.getApiVersion().startsWith("cert-manager.io/"));
        all.sort(Comparator.comparingInt(o -> ORDER.getOrDefault(o.getKind(), 2)));
        return all;
    }

    /** Whether the API server lets the service account {@code dilu-system/sa} do {@code verb} on a resource there. */
    private static boolean allowed(String sa, String verb, String group, String resource) {
        return api.allowed("dilu-system", sa, verb, group, resource);
    }

    @Test
    void theKustomizationInstallsEveryManifestButTheExamplesAndCertManagersCertificate() throws IOException {
        Path root = RealApiServer.manifests();
        List<String> files;
        try (Stream<Path> all = Files.walk(root)) {
            files = all.filter(p -> p.toString().endsWith(".yaml")).map(p -> root.relativize(p).toString())
                    .filter(p -> !p.equals("kustomization.yaml") && !p.startsWith("examples/")
                            && !p.equals("webhook/certificate.yaml"))
                    .sorted().toList();
        }
        List<String> listed = Files.readAllLines(root.resolve("kustomization.yaml")).stream()
                .map(String::strip).filter(l -> l.startsWith("- ")).map(l -> l.substring(2).strip()).sorted().toList();
        assertThat(listed).isEqualTo(files);
    }

    @Test
    void theApiServerAcceptsEveryManifest() throws Exception {
        List<HasMetadata> objects = load();
        assertThat(objects).extracting(HasMetadata::getKind).contains("Namespace", "CustomResourceDefinition",
                "DaemonSet", "ClusterRole", "ClusterRoleBinding", "ServiceAccount");
        // Knative Serving is installed first: the autoscaler's read of config-autoscaler is granted in its namespace.
        api.createNamespace(KnativeNames.SERVING_NAMESPACE, Map.of());
        for (HasMetadata o : objects) {
            HasMetadata created = api.client().resource(o).create();
            assertThat(created.getMetadata().getUid()).as("%s %s", o.getKind(), o.getMetadata().getName()).isNotBlank();
        }
        // What the shipped service accounts may do, as this RBAC-enforcing API server judges it.
        assertThat(allowed("dilu-autoscaler", "patch", "coordination.k8s.io", "leases"))
                .as("the autoscaler renews its leader lease with a PATCH (fabric8's LeaderElector)").isTrue();
        assertThat(allowed("dilu-autoscaler", "update", "apps", "deployments/scale")).isTrue();
        assertThat(allowed("dilu-autoscaler", "create", "", "pods")).as("its profiler runs trials as pods").isTrue();
        assertThat(allowed("dilu-autoscaler", "watch", "", "nodes")).as("sized from the nodes' GPU inventories").isTrue();
        assertThat(allowed("dilu-autoscaler", "update", "dilu.io", "gpufunctionprofiles/status"))
                .as("and writes what they found into the profile's status").isTrue();
        assertThat(allowed("dilu-autoscaler", "update", "dilu.io", "gpufunctionprofiles")).as("never the spec").isFalse();
        assertThat(allowed("dilu-autoscaler", "get", "", "secrets")).as("nothing beyond what it needs").isFalse();
        assertThat(api.grantedInNamespace(KnativeNames.SERVING_NAMESPACE, "dilu-system", "dilu-autoscaler", "watch", "", "configmaps"))
                .as("config-autoscaler, Knative's defaults").isTrue();
        assertThat(api.grantedInNamespace(KnativeNames.SERVING_NAMESPACE, "dilu-system", "dilu-autoscaler", "get", "", "secrets")).isFalse();
        for (String verb : List.of("get", "list", "watch", "create", "update", "delete")) {
            assertThat(allowed("dilu-autoscaler", verb, "", "configmaps")).as("its revisions' histories beside its Lease: %s", verb)
                    .isTrue();
        }
        assertThat(api.grantedInNamespace("fns", "dilu-system", "dilu-autoscaler", "update", "", "configmaps"))
                .as("no tenant's ConfigMaps").isFalse();
        assertThat(api.grantedInNamespace(KnativeNames.SERVING_NAMESPACE, "dilu-system", "dilu-autoscaler", "update", "", "configmaps"))
                .as("nor Knative's").isFalse();
        for (String sa : List.of("dilu-node-agent", "dilu-scheduler")) {
            assertThat(api.grantedInNamespace("fns", "dilu-system", sa, "create", "", "events"))
                    .as("%s writes events on pods in any namespace", sa).isTrue();
            assertThat(api.grantedInNamespace("fns", "dilu-system", sa, "delete", "", "events"))
                    .as("%s only creates events", sa).isFalse();
        }
        assertThat(allowed("dilu-webhook", "create", "", "events")).as("the webhook writes none").isFalse();
        assertThat(api.grantedInNamespace("fns", "dilu-system", "dilu-webhook", "get", "", "configmaps"))
                .as("it reads the keys of a ConfigMap a pod's envFrom names").isTrue();
        for (String verb : List.of("list", "watch", "update")) {
            assertThat(api.grantedInNamespace("fns", "dilu-system", "dilu-webhook", verb, "", "configmaps")).as("configmaps: %s", verb)
                    .isFalse();
        }
        assertThat(api.grantedInNamespace("fns", "dilu-system", "dilu-webhook", "get", "", "secrets")).as("never Secrets").isFalse();
        DaemonSet agent = api.client().apps().daemonSets().inNamespace("dilu-system").withName("dilu-node-agent").get();
        assertThat(agent.getSpec().getTemplate().getSpec().getServiceAccountName()).isEqualTo("dilu-node-agent");
        assertThat(agent.getSpec().getTemplate().getSpec().getContainers().getFirst().getVolumeMounts())
                .extracting(m -> m.getMountPath())
                .contains("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources", "/var/lib/dilu");
    }
}
