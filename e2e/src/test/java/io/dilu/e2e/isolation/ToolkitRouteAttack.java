package io.dilu.e2e.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.e2e.isolation.ControlPlaneAttacks.Outcome;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.SocketTempDirs;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhook;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Issue 36, item 6: {@code NVIDIA_VISIBLE_DEVICES=all} in a namespace the webhook does not cover, while its webhook
 * cannot answer ({@code failurePolicy: Ignore}: admitted). What must hold then is the node: a node agent whose
 * node's NVIDIA toolkit still honours the variable has tainted its node, and kube-scheduler places nothing there that
 * does not tolerate the taint — so the pod gets no GPU.
 *
 * <p>Run here: a real node agent (emulated GPU, its toolkit file a temporary one with the variable route open, the
 * default) on a Node of its own, the real kube-scheduler's default profile, and the uncovered webhook pointed at a port
 * nobody listens on, as a webhook past its timeout looks to the API server. The webhook is put back afterwards.
 */
final class ToolkitRouteAttack {

    static final String NAME = "nvidia-env-webhook-down";
    static final String OPEN_NODE = "gpu-node-open-toolkit";
    private static final String UNCOVERED_WEBHOOK = "uncovered.pods.dilu.io";
    private static final String HOSTNAME = "kubernetes.io/hostname";

    private final KubernetesClient client;
    private final Path kubeconfig;
    private final Path work;
    private final Path logs;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    ToolkitRouteAttack(RealApiServer api, Path kubeconfig, Path work, Path logs) {
        this.client = api.client();
        this.kubeconfig = kubeconfig;
        this.work = work;
        this.logs = logs;
    }

    Outcome run() throws Exception {
        LocalControlPlane.createGpuNode(client, OPEN_NODE, List.of(new GpuDevice("GPU-iso-open-0", 0, "A100-40GB", 40_960, 108)));
        client.nodes().withName(OPEN_NODE).edit(n -> {
            n.getMetadata().setLabels(new HashMap<>(Map.of(HOSTNAME, OPEN_NODE, "dilu.io/gpu-node", "true")));
            return n;
        });
        Path dir = Files.createDirectories(work.resolve("open-toolkit-node"));
        Path sockets = SocketTempDirs.create();
        int port = LocalControlPlane.freePort();
        Pod created = null;
        String url = null;
        try (ChildProcess agent = ChildProcess.quarkusApp("device-plugin", agentEnv(dir, sockets, port), logs.resolve("node-agent.log"));
                ChildProcess scheduler = ChildProcess.start(List.of(RealApiServer.kubeScheduler().toString(),
                        "--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"), Map.of(),
                        logs.resolve("default-scheduler.log"))) {
            boolean tainted = await(Duration.ofSeconds(120), () -> taintedOpen() ? Optional.of(true) : Optional.empty()).isPresent();
            String metric = metric(port);
            url = uncoveredUrl(null);
            uncoveredUrl("https://127.0.0.1:" + LocalControlPlane.freePort() + "/validate-uncovered");
            // The API server picks the changed configuration up within a moment: until then the webhook still refuses.
            Optional<Pod> admitted = await(Duration.ofSeconds(30), this::createGpuMiner);
            if (admitted.isEmpty()) {
                return new Outcome(NAME, tainted, "the uncovered webhook could not be made unreachable (every try refused); node "
                        + "tainted " + tainted);
            }
            created = admitted.get();
            String miner = created.getMetadata().getName();
            Optional<String> unschedulable = await(Duration.ofSeconds(60), () -> unschedulable(miner));
            Pod now = client.pods().inNamespace(ControlPlaneAttacks.UNCOVERED).withName(created.getMetadata().getName()).get();
            String bound = now.getSpec().getNodeName();
            // kube-scheduler names no taint key in its verdict ("had untolerated taint(s)"): the toolkit's taint is what
            // kept the pod off when it is the only taint of the only node the pod selects.
            boolean offByTheTaint = unschedulable.map(m -> m.contains(DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT)
                    || (m.contains("untolerated taint") && onlyTheToolkitTaint())).orElse(false);
            boolean contained = tainted && metric.contains("dilu_toolkit_envvar_route_open 1.0") && (bound == null || bound.isEmpty())
                    && offByTheTaint;
            return new Outcome(NAME, contained, "webhook unreachable, the pod admitted (failurePolicy Ignore); node "
                    + (tainted ? "tainted " + DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT : "NOT tainted") + " by its agent ("
                    + (metric.contains("dilu_toolkit_envvar_route_open 1.0") ? "dilu_toolkit_envvar_route_open 1" : "metric missing")
                    + "); kube-scheduler: " + unschedulable.orElse("no verdict") + "; bound to " + (bound == null ? "nothing" : bound));
        } finally {
            if (url != null) {
                uncoveredUrl(url);
            }
            if (created != null) {
                client.pods().inNamespace(ControlPlaneAttacks.UNCOVERED).withName(created.getMetadata().getName())
                        .withGracePeriod(0).delete();
            }
            client.nodes().withName(OPEN_NODE).delete();
            deleteTree(sockets);
        }
    }

    /** The agent as the DaemonSet runs it, over temporary directories, its toolkit file at the toolkit's defaults. */
    private Map<String, String> agentEnv(Path dir, Path sockets, int port) throws Exception {
        Path toolkit = Files.writeString(dir.resolve("config.toml"), "disable-require = false\n\n[nvidia-container-cli]\n"
                + "ldconfig = \"@/sbin/ldconfig\"\n");
        Map<String, String> env = new HashMap<>();
        env.put("KUBECONFIG", kubeconfig.toString());
        env.put("QUARKUS_HTTP_PORT", Integer.toString(port));
        env.put("DILU_AGENT_NODE_NAME", OPEN_NODE);
        env.put("DILU_AGENT_EMULATED_GPUS", "1x A100-40GB, 108 SMs");
        env.put("DILU_AGENT_TOOLKIT_CONFIG", toolkit.toString());
        env.put("DILU_AGENT_DEVICE_PLUGINS_DIR", sockets.toString());
        env.put("DILU_AGENT_CONTROL_ROOT", dir.resolve("containers").toString());
        env.put("DILU_AGENT_PRELOAD_HOST_PATH", dir.resolve("ld.so.preload").toString());
        env.put("DILU_AGENT_EMULATOR_HOST_DIR", dir.resolve("emulated-gpus").toString());
        env.put("DILU_AGENT_MATCH_PODS", "false");
        env.put("DILU_AGENT_BACKSTOP_ENABLED", "false");
        return env;
    }

    private boolean taintedOpen() {
        Node node = client.nodes().withName(OPEN_NODE).get();
        return node.getSpec().getTaints() != null && node.getSpec().getTaints().stream()
                .anyMatch(t -> DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT.equals(t.getKey()) && "NoSchedule".equals(t.getEffect()));
    }

    private boolean onlyTheToolkitTaint() {
        Node node = client.nodes().withName(OPEN_NODE).get();
        return node.getSpec().getTaints() != null && !node.getSpec().getTaints().isEmpty() && node.getSpec().getTaints().stream()
                .allMatch(t -> DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT.equals(t.getKey()));
    }

    private String metric(int port) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/metrics")).timeout(Duration.ofSeconds(10))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return "(no metrics: " + e + ")";
        }
    }

    /** Sets the uncovered webhook's URL when {@code url} is given; returns the one it had. */
    private String uncoveredUrl(String url) {
        String[] before = new String[1];
        client.admissionRegistration().v1().validatingWebhookConfigurations().withName("dilu-webhook").edit(c -> {
            for (ValidatingWebhook w : c.getWebhooks()) {
                if (w.getName().equals(UNCOVERED_WEBHOOK)) {
                    before[0] = w.getClientConfig().getUrl();
                    if (url != null) {
                        w.getClientConfig().setUrl(url);
                    }
                }
            }
            return c;
        });
        return before[0];
    }

    /** The tenant's pod: no share, every GPU by the toolkit's variable, aimed at the open node. */
    private Optional<Pod> createGpuMiner() {
        Pod pod = new PodBuilder().withNewMetadata().withGenerateName("miner-").withNamespace(ControlPlaneAttacks.UNCOVERED)
                .endMetadata().withNewSpec().withAutomountServiceAccountToken(false).withNodeSelector(Map.of(HOSTNAME, OPEN_NODE))
                .addNewContainer().withName("miner").withImage("registry.local/cuda:12").addToEnv(new EnvVar(
                        ControlPlaneAttacks.VISIBLE_DEVICES, "all", null)).endContainer().endSpec().build();
        try {
            return Optional.of(client.pods().inNamespace(ControlPlaneAttacks.UNCOVERED).resource(pod).create());
        } catch (KubernetesClientException refused) {
            return Optional.empty();
        }
    }

    /** kube-scheduler's verdict on the miner, once it has one. */
    private Optional<String> unschedulable(String name) {
        Pod p = client.pods().inNamespace(ControlPlaneAttacks.UNCOVERED).withName(name).get();
        return (p == null || p.getStatus() == null || p.getStatus().getConditions() == null ? List.<PodCondition>of()
                : p.getStatus().getConditions()).stream()
                .filter(c -> "PodScheduled".equals(c.getType()) && "False".equals(c.getStatus()) && "Unschedulable".equals(c.getReason()))
                .map(PodCondition::getMessage).findFirst();
    }

    private static <T> Optional<T> await(Duration limit, Supplier<Optional<T>> probe) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (true) {
            Optional<T> v = probe.get();
            if (v.isPresent() || System.nanoTime() > deadline) {
                return v;
            }
            Thread.sleep(250);
        }
    }

    private static void deleteTree(Path root) {
        try (var paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception e) {
            // already gone
        }
    }
}
