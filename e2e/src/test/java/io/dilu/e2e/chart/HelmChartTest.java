package io.dilu.e2e.chart;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.DocumentedMetrics;
import io.dilu.testing.KubeRelease;
import io.dilu.testing.RealApiServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The chart {@code charts/dilu}, rendered and linted offline: the scheduler configuration and kube-scheduler
 * image follow the cluster's version, the default rendering holds the objects of {@code manifests/}, optional
 * parts appear only when asked for, the dashboard queries only documented metrics, and dilu.yaml is up to date.
 */
class HelmChartTest {

    private static final Path ROOT = RealApiServer.root();

    @ParameterizedTest(name = "Kubernetes {0}: {1}, kube-scheduler {2}")
    @CsvSource({
            "1.20.2, kubescheduler.config.k8s.io/v1beta1, v1.20.2, true",
            "1.21.14, kubescheduler.config.k8s.io/v1beta1, v1.21.14, true",
            "1.22.17, kubescheduler.config.k8s.io/v1beta2, v1.22.17, true",
            "1.23.17, kubescheduler.config.k8s.io/v1beta3, v1.23.17, false",
            "1.24.17, kubescheduler.config.k8s.io/v1beta3, v1.24.17, false",
            "1.25.0, kubescheduler.config.k8s.io/v1, v1.25.0, false",
            "1.31.0, kubescheduler.config.k8s.io/v1, v1.31.0, false"})
    void theSchedulerFollowsTheClustersVersion(String kube, String configApi, String tag, boolean portFlag) {
        Map<String, Object> deployment = one(render(kube, Map.of()), "Deployment", "dilu-scheduler");
        assertThat(schedulerConfig(render(kube, Map.of())).get("apiVersion")).isEqualTo(configApi);
        Map<String, Object> scheduler = container(deployment, "kube-scheduler");
        assertThat(scheduler.get("image")).isEqualTo("registry.k8s.io/kube-scheduler:" + tag);
        assertThat(strings(scheduler.get("command"))).as("--port exists before 1.23 only")
                .containsExactlyElementsOf(portFlag
                        ? List.of("kube-scheduler", "--config=/etc/dilu/scheduler-config.yaml", "--port=0")
                        : List.of("kube-scheduler", "--config=/etc/dilu/scheduler-config.yaml"));
    }

    @Test
    void aVendorsVersionSuffixIsDroppedAndTheValuesOverrideWhatHelmSays() {
        String out = render("1.31.0", Map.of("kubeVersion", "v1.23.17+k3s1"));
        assertThat(schedulerConfig(out).get("apiVersion")).isEqualTo("kubescheduler.config.k8s.io/v1beta3");
        assertThat(container(one(out, "Deployment", "dilu-scheduler"), "kube-scheduler").get("image"))
                .isEqualTo("registry.k8s.io/kube-scheduler:v1.23.17");
        out = render("1.31.0", Map.of("kubeVersion", "1.27.9-eks-5e0fdde",
                "scheduler.configApiVersion", "kubescheduler.config.k8s.io/v1beta3",
                "scheduler.kubeScheduler.image.registry", "registry.example.com",
                "scheduler.kubeScheduler.image.tag", "v1.27.9-custom"));
        assertThat(schedulerConfig(out).get("apiVersion")).isEqualTo("kubescheduler.config.k8s.io/v1beta3");
        assertThat(container(one(out, "Deployment", "dilu-scheduler"), "kube-scheduler").get("image"))
                .isEqualTo("registry.example.com/kube-scheduler:v1.27.9-custom");
    }

    @Test
    void theSchedulerConfigurationKeepsTheExtenderOfManifests() {
        Map<String, Object> config = schedulerConfig(render("1.31.0", Map.of()));
        Map<String, Object> shipped = schedulerConfigOf(manifestObjects());
        config.remove("apiVersion");
        shipped.remove("apiVersion");
        assertThat(config).isEqualTo(shipped);
    }

    @Test
    void lintIsClean() {
        LintResult lint = new Helm(DiluChart.dir()).lint().strict().call();
        assertThat(lint.isFailed()).as("%s", lint.getMessages()).isFalse();
        assertThat(lint.getMessages()).noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
    }

    @Test
    void theDefaultRenderingHoldsTheObjectsOfManifestsWithTheirRbac() throws IOException {
        List<Map<String, Object>> chart = DiluChart.objects(render("1.20.2", Map.of("namespace.create", "true")));
        List<Map<String, Object>> shipped = manifestObjects();
        assertThat(keys(chart)).isEqualTo(keys(shipped));
        for (Map<String, Object> o : shipped) {
            String kind = (String) o.get("kind");
            if (kind.endsWith("Role") || kind.endsWith("RoleBinding")) {
                Map<String, Object> mine = one(chart, kind, name(o));
                for (String field : List.of("rules", "roleRef", "subjects")) {
                    assertThat(mine.get(field)).as("%s %s %s", kind, name(o), field).isEqualTo(o.get(field));
                }
            }
        }
        // The chart holds a copy of the CRD (a chart cannot reach outside its directory): the same schema.
        Map<String, Object> crd = one(shipped, "CustomResourceDefinition", "gpufunctionprofiles.dilu.io");
        assertThat(one(chart, "CustomResourceDefinition", "gpufunctionprofiles.dilu.io").get("spec"))
                .as("charts/dilu/templates/crd.yaml's spec, against manifests/crds/").isEqualTo(crd.get("spec"));
        // Same selectors, so a cluster installed from manifests/ upgrades in place.
        for (Map<String, Object> o : shipped) {
            if (o.get("kind").equals("Deployment") || o.get("kind").equals("DaemonSet")) {
                assertThat(at(one(chart, (String) o.get("kind"), name(o)), "spec", "selector")).isEqualTo(at(o, "spec", "selector"));
            }
        }
    }

    /**
     * The node agent taints a node whose NVIDIA toolkit honours NVIDIA_VISIBLE_DEVICES; its DaemonSet tolerates that
     * taint by the name the agent uses, in the chart (whatever tolerations a user adds) and in manifests/, so that an
     * agent restarted there can come back and lift it.
     */
    @Test
    @SuppressWarnings("unchecked")
    void theAgentToleratesItsOwnTaint() throws IOException {
        Map<String, Object> own = Map.of("key", io.dilu.core.contract.DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT, "operator", "Exists",
                "effect", "NoSchedule");
        for (Map<String, ?> values : List.of(Map.<String, Object>of(), Map.of("nodeAgent.tolerations", "null"))) {
            assertThat((List<Object>) at(one(DiluChart.objects(render("1.25.0", values)), "DaemonSet", "dilu-node-agent"), "spec",
                    "template", "spec", "tolerations")).as("%s", values).contains(own);
        }
        assertThat((List<Object>) at(one(manifestObjects(), "DaemonSet", "dilu-node-agent"), "spec", "template", "spec", "tolerations"))
                .contains(own);
        assertThat(env(container(one(DiluChart.objects(render("1.25.0", Map.of("nodeAgent.allowOpenToolkit", "true"))),
                "DaemonSet", "dilu-node-agent"), "agent"))).containsEntry("DILU_AGENT_ALLOW_OPEN_TOOLKIT", "true");
    }

    @Test
    void optionalPartsAppearOnlyWhenAskedFor() throws IOException {
        List<Map<String, Object>> plain = DiluChart.objects(render("1.25.0", Map.of()));
        assertThat(plain).extracting(o -> o.get("kind"))
                .doesNotContain("Namespace", "ServiceMonitor", "Issuer", "Certificate")
                .contains("CustomResourceDefinition");
        assertThat(plain).noneMatch(o -> name(o).equals("dilu-grafana-dashboard"));
        Map<String, Object> agent = container(one(plain, "DaemonSet", "dilu-node-agent"), "agent");
        assertThat(envNames(agent)).contains("NVIDIA_VISIBLE_DEVICES").doesNotContain("DILU_AGENT_EMULATED_GPUS", "DILU_AGENT_PERIOD");
        assertThat(env(container(one(plain, "Deployment", "dilu-webhook"), "webhook"))).doesNotContainKey("DILU_WEBHOOK_ETA_VIOLATION");
        assertThat(at(one(plain, "DaemonSet", "dilu-node-agent"), "spec", "template", "spec", "nodeSelector"))
                .isEqualTo(Map.of("dilu.io/gpu-node", "true"));
        // The backstop reads host pids and ends processes; NVML comes by the toolkit's volume-mount route too
        // (docs/install.md, "GPU nodes").
        assertThat(at(one(plain, "DaemonSet", "dilu-node-agent"), "spec", "template", "spec", "hostPID")).isEqualTo(true);
        assertThat(at(agent, "securityContext", "capabilities", "add")).isEqualTo(List.of("KILL"));
        assertThat(agent.get("volumeMounts").toString()).contains("mountPath=/var/run/nvidia-container-devices/all");
        assertThat(env(agent)).containsEntry("DILU_AGENT_DEVICE_LIST_STRATEGY", "volume-mounts")
                .containsEntry("DILU_AGENT_ALLOW_OPEN_TOOLKIT", "false")
                .containsEntry("DILU_AGENT_BACKSTOP_KILL_MEMORY_EXCESS", "true");

        Map<String, Object> all = new HashMap<>(Map.of("monitoring.serviceMonitors.enabled", "true",
                "monitoring.grafanaDashboard.enabled", "true", "webhook.certManager.enabled", "true",
                "emulation.enabled", "true", "nodeAgent.tokens.period", "10ms", "nodeAgent.tokens.etaViolation", "1.3",
                "image.registry", "registry.example.com/dilu", "image.tag", "0.2.0"));
        List<Map<String, Object>> full = DiluChart.objects(render("1.25.0", all));
        assertThat(full.stream().filter(o -> o.get("kind").equals("ServiceMonitor")).map(HelmChartTest::name))
                .containsExactlyInAnyOrder("dilu-node-agent", "dilu-scheduler", "dilu-webhook", "dilu-autoscaler");
        assertThat(full).extracting(o -> o.get("kind")).contains("Issuer", "Certificate");
        Map<String, Object> dashboard = one(full, "ConfigMap", "dilu-grafana-dashboard");
        assertThat(new ObjectMapper().readTree((String) at(dashboard, "data", "dilu.json")).get("panels").size()).isGreaterThan(5);
        agent = container(one(full, "DaemonSet", "dilu-node-agent"), "agent");
        assertThat(env(agent)).containsEntry("DILU_AGENT_EMULATED_GPUS", "4x A100-40GB, 108 SMs")
                .containsEntry("DILU_AGENT_PERIOD", "10ms").containsEntry("DILU_AGENT_ETA_VIOLATION", "1.3")
                .doesNotContainKey("NVIDIA_VISIBLE_DEVICES");
        assertThat(env(container(one(full, "Deployment", "dilu-webhook"), "webhook"))).as("admission judges the nodes' threshold")
                .containsEntry("DILU_WEBHOOK_ETA_VIOLATION", "1.3");
        assertThat(at(agent, "securityContext", "capabilities", "add")).isEqualTo(List.of("KILL", "SYS_PTRACE"));
        assertThat(agent.get("volumeMounts").toString()).doesNotContain("nvidia");
        assertThat(agent.get("image")).isEqualTo("registry.example.com/dilu/node-agent:0.2.0");

        List<Map<String, Object>> none = DiluChart.objects(render("1.25.0", Map.of("nodeAgent.enabled", "false",
                "scheduler.enabled", "false", "webhook.enabled", "false", "autoscaler.enabled", "false", "crd.install", "false")));
        assertThat(none).isEmpty();
    }

    @Test
    void replacingKnativesAutoscalerTakesItsServiceAndAnUnknownModeIsRefusedByName() throws IOException {
        List<Map<String, Object>> alongside = DiluChart.objects(render("1.31.0", Map.of()));
        assertThat(env(container(one(alongside, "Deployment", "dilu-autoscaler"), "autoscaler")))
                .containsEntry("DILU_AUTOSCALER_MODE", "alongside").containsEntry("DILU_AUTOSCALER_KNATIVE_NAMESPACE", KnativeNames.SERVING_NAMESPACE);
        assertThat(alongside).noneMatch(o -> o.get("kind").equals("Service") && name(o).equals("autoscaler"));
        assertThat(at(one(alongside, "Role", "dilu-autoscaler-knative-config"), "metadata", "namespace")).isEqualTo(KnativeNames.SERVING_NAMESPACE);

        List<Map<String, Object>> replace = DiluChart.objects(render("1.31.0", Map.of("autoscaler.mode", "replace")));
        Map<String, Object> service = one(replace, "Service", "autoscaler");
        assertThat(at(service, "metadata", "namespace")).as("where Knative's activator looks for it").isEqualTo(KnativeNames.SERVING_NAMESPACE);
        // A Service selects pods of its own namespace only: Knative's name points at the autoscaler's own Service.
        assertThat(at(service, "spec", "type")).isEqualTo("ExternalName");
        assertThat(at(service, "spec", "externalName")).isEqualTo("dilu-autoscaler-activator.dilu-system.svc.cluster.local");
        Map<String, Object> stats = one(replace, "Service", "dilu-autoscaler-activator");
        assertThat(at(stats, "metadata", "namespace")).isEqualTo("dilu-system");
        assertThat(at(stats, "spec", "ports").toString()).contains("port=8080", "targetPort=stats");
        assertThat(at(container(one(replace, "Deployment", "dilu-autoscaler"), "autoscaler"), "ports").toString())
                .contains("name=stats", "containerPort=8080");
        assertThat(at(container(one(alongside, "Deployment", "dilu-autoscaler"), "autoscaler"), "ports").toString())
                .doesNotContain("stats");
        // Only Knative's activator pods may reach the activator's port; the HTTP port (metrics, health) stays open.
        for (List<Map<String, Object>> objects : List.of(alongside, replace)) {
            Map<String, Object> policy = one(objects, "NetworkPolicy", "dilu-autoscaler");
            assertThat(at(policy, "spec", "podSelector").toString()).isEqualTo("{matchLabels={app.kubernetes.io/name=dilu-autoscaler}}");
            assertThat(at(policy, "spec", "ingress").toString()).isEqualTo("[{ports=[{protocol=TCP, port=8083}]}, "
                    + "{from=[{namespaceSelector={matchLabels={kubernetes.io/metadata.name=knative-serving}}, "
                    + "podSelector={matchLabels={app=activator}}}], ports=[{protocol=TCP, port=8080}]}]");
        }
        assertThat(DiluChart.objects(render("1.31.0", Map.of("autoscaler.networkPolicy.enabled", "false"))))
                .noneMatch(o -> o.get("kind").equals("NetworkPolicy"));
        assertThat(env(container(one(replace, "Deployment", "dilu-autoscaler"), "autoscaler")))
                .containsEntry("DILU_AUTOSCALER_MODE", "replace");

        assertThat(env(container(one(alongside, "Deployment", "dilu-webhook"), "webhook"))).doesNotContainKey("DILU_WEBHOOK_RUNTIME_CLASS_NAME");
        assertThat(env(container(one(DiluChart.objects(render("1.31.0", Map.of("webhook.runtimeClassName", "nvidia"))),
                "Deployment", "dilu-webhook"), "webhook"))).containsEntry("DILU_WEBHOOK_RUNTIME_CLASS_NAME", "nvidia");

        assertThatThrownBy(() -> render("1.31.0", Map.of("autoscaler.mode", "instead")))
                .hasMessageContaining("autoscaler.mode=instead is not allowed: must be alongside or replace");
    }

    /**
     * Every metric the dashboard's queries use is one the docs list with its name as exported (the components'
     * tables, which their tests hold to real scrapes, and the Knative ones of docs/install.md), and so is every
     * {@code dilu_} name its text mentions.
     */
    @Test
    void theDashboardQueriesOnlyDocumentedMetrics() throws IOException {
        Map<String, String> documented = new HashMap<>();
        for (String doc : List.of("node-agent.md", "scheduler-extender.md", "webhook.md", "autoscaler.md")) {
            DocumentedMetrics.of(DocumentedMetrics.doc(doc)).forEach(m -> documented.put(m.name(), m.type()));
        }
        DocumentedMetrics.of(DocumentedMetrics.doc("install.md"), "## Monitoring")
                .forEach(m -> documented.put(m.name(), m.type()));
        String json = Files.readString(DiluChart.dir().resolve("dashboards/dilu.json"));
        Set<String> queried = new TreeSet<>();
        for (JsonNode panel : new ObjectMapper().readTree(json).get("panels")) {
            for (JsonNode target : panel.path("targets")) {
                queried.addAll(metricNames(target.get("expr").asText()));
            }
        }
        assertThat(queried).as("metrics the dashboard queries").contains("dilu_container_blocks_launched_total",
                "dilu_container_tokens_granted_total", "dilu_container_controller_state", "dilu_container_klc_seconds",
                "dilu_autoscaler_desired_pods", "dilu_autoscaler_ready_pods")
                .allSatisfy(name -> assertThat(documented(name, documented)).as("%s is documented", name).isTrue());
        Matcher mentioned = Pattern.compile("\\bdilu_[a-z_]+").matcher(json);
        while (mentioned.find()) {
            assertThat(documented).as("%s, mentioned in the dashboard", mentioned.group()).containsKey(mentioned.group());
        }
    }

    @Test
    void metricNamesAreReadFromPromQl() {
        assertThat(metricNames("histogram_quantile(0.95, sum by (namespace_name, le) (rate(x_bucket{a=\"b\"}[5m])))"))
                .containsExactly("x_bucket");
        assertThat(metricNames("max by (gpu, state) (dilu_a) > 0 and on (gpu) dilu_b offset 5m"))
                .containsExactly("dilu_a", "dilu_b");
    }

    /** A histogram is queried through its series: name_bucket, name_sum, name_count. */
    static boolean documented(String name, Map<String, String> documented) {
        if (documented.containsKey(name)) {
            return true;
        }
        String base = name.replaceFirst("_(bucket|sum|count)$", "");
        return !base.equals(name) && "histogram".equals(documented.get(base));
    }

    private static final Set<String> PROMQL_WORDS = Set.of("by", "without", "on", "ignoring", "group_left",
            "group_right", "and", "or", "unless", "bool", "offset");

    /** The metric names a PromQL expression selects: its identifiers that are not functions, labels or keywords. */
    static Set<String> metricNames(String expr) {
        String bare = expr.replaceAll("\"(\\\\.|[^\"\\\\])*\"", "\"\"")
                .replaceAll("\\{[^}]*}", " ")
                .replaceAll("\\[[^\\]]*\\]", " ")
                .replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " ");
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("\\b([a-zA-Z_:][a-zA-Z0-9_:]*)\\b(\\s*\\()?").matcher(bare);
        while (m.find()) {
            if (m.group(2) == null && !PROMQL_WORDS.contains(m.group(1))) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    @Test
    void diluYamlIsUpToDate() throws IOException {
        String expected = ReleaseManifest.render(ROOT, ReleaseManifest.KUBE_VERSION);
        Path file = ROOT.resolve(ReleaseManifest.FILE);
        assertThat(Files.exists(file) ? Files.readString(file) : "")
                .as("dilu.yaml is out of date with charts/dilu: run ./dilu release-manifest").isEqualTo(expected);
    }

    /** The local cluster installs the chart: its rendering is up to date, for its release, with the images built here. */
    @Test
    void theLocalClustersRenderingIsUpToDate() throws IOException {
        String expected = ReleaseManifest.renderLocal(ROOT);
        Path file = ROOT.resolve(ReleaseManifest.LOCAL_FILE);
        assertThat(Files.exists(file) ? Files.readString(file) : "")
                .as("%s is out of date with charts/dilu: run ./dilu release-manifest", ReleaseManifest.LOCAL_FILE)
                .isEqualTo(expected);
        List<Map<String, Object>> objects = DiluChart.objects(expected);
        assertThat(container(one(objects, "Deployment", "dilu-scheduler"), "kube-scheduler").get("image"))
                .isEqualTo("dilu.local/kube-scheduler:v" + KubeRelease.version(ROOT));
        assertThat(env(container(one(objects, "DaemonSet", "dilu-node-agent"), "agent"))).containsKey("DILU_AGENT_EMULATED_GPUS");
    }

    // ---- helpers

    static String render(String kube, Map<String, ?> values) {
        return DiluChart.render(kube, values);
    }

    static Map<String, Object> schedulerConfig(String rendered) {
        return schedulerConfigOf(DiluChart.objects(rendered));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> schedulerConfigOf(List<Map<String, Object>> objects) {
        String text = (String) at(one(objects, "ConfigMap", "dilu-scheduler-config"), "data", "scheduler-config.yaml");
        return (Map<String, Object>) DiluChart.objects(text).getFirst();
    }

    /** Every object under manifests/ that `kubectl apply -k manifests/` installs, with cert-manager's certificate. */
    static List<Map<String, Object>> manifestObjects() {
        Path dir = RealApiServer.root().resolve("manifests");
        List<Map<String, Object>> all = new ArrayList<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml"))
                    .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
                    .filter(p -> !dir.relativize(p).startsWith("examples"))
                    .filter(p -> !dir.relativize(p).toString().equals("webhook/certificate.yaml")).sorted().toList()) {
                all.addAll(DiluChart.objects(Files.readString(f)));
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return all;
    }

    static Set<String> keys(List<Map<String, Object>> objects) {
        return objects.stream().map(o -> o.get("kind") + " " + at(o, "metadata", "namespace") + "/" + name(o))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static String name(Map<String, Object> o) {
        return (String) at(o, "metadata", "name");
    }

    static Map<String, Object> one(String rendered, String kind, String name) {
        return one(DiluChart.objects(rendered), kind, name);
    }

    static Map<String, Object> one(List<Map<String, Object>> objects, String kind, String name) {
        List<Map<String, Object>> found = objects.stream().filter(o -> kind.equals(o.get("kind")) && name.equals(name(o))).toList();
        assertThat(found).as("%s %s", kind, name).hasSize(1);
        return found.getFirst();
    }

    @SuppressWarnings("unchecked")
    static Object at(Map<String, Object> o, String... path) {
        Object at = o;
        for (String p : path) {
            at = at == null ? null : ((Map<String, Object>) at).get(p);
        }
        return at;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> container(Map<String, Object> workload, String name) {
        List<Map<String, Object>> containers = (List<Map<String, Object>>) at(workload, "spec", "template", "spec", "containers");
        return containers.stream().filter(c -> name.equals(c.get("name"))).findFirst().orElseThrow();
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> env(Map<String, Object> container) {
        Map<String, String> env = new HashMap<>();
        for (Map<String, Object> e : (List<Map<String, Object>>) container.getOrDefault("env", List.of())) {
            env.put((String) e.get("name"), (String) e.get("value"));
        }
        return env;
    }

    static Set<String> envNames(Map<String, Object> container) {
        return env(container).keySet();
    }

    @SuppressWarnings("unchecked")
    static List<String> strings(Object list) {
        return (List<String>) list;
    }
}
