package io.dilu.e2e.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.kube.ParkingPatch;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.loadgen.LoadGenerator;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.LoadSettings;
import io.dilu.loadgen.RateTrace;
import io.dilu.testing.KubeClients;
import io.dilu.testing.MetricsPage;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Dilu as a user installs it, on a real cluster on this machine ({@code ./dilu cluster}): real kubelet and
 * containerd, the project's images and manifests, pods running the emulated workloads with the hook loaded
 * by the node. Brings a one-node cluster up and takes it down — also when a test fails — and checks that
 * nothing of it remains. Needs root: run with {@code ./dilu cluster test}.
 */
@EnabledIfSystemProperty(named = "dilu.cluster", matches = "true")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LocalClusterIT {

    private static final Path ROOT = Path.of(System.getProperty("dilu.root", "..")).toAbsolutePath().normalize();
    private static final Path CLUSTER = ROOT.resolve("cluster/bin/dilu-cluster");
    private static final Path DIR = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
    private static final String NS = "e2e";
    /** The node agent's DaemonSet runs on the nodes labelled so (manifests/node-agent/daemonset.yaml). */
    private static final String AGENT_NODE_LABEL = "dilu.io/gpu-node";
    /** One emulated A100's tokens per 5 ms period: 108 SMs × 5 ms / 100 µs blocks. */
    private static final double MAX_TOKENS_PER_SECOND = 5_400 / 0.005;

    private KubernetesClient client;

    @BeforeAll
    void up() throws Exception {
        anInterruptedUpTakesItselfDown();
        String out = run(Duration.ofMinutes(10), CLUSTER.toString(), "up", "--nodes", "1");
        assertThat(out).contains("installed: node agents, dilu-scheduler, webhook and autoscaler Ready");
        client = KubeClients.fromKubeconfig(DIR.resolve("admin.kubeconfig"));
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NS)
                .addToLabels("dilu.io/webhook", "enabled").endMetadata().build()).serverSideApply();
    }

    @AfterAll
    void down() throws Exception {
        if (client != null) {
            client.close();
        }
        run(Duration.ofMinutes(3), CLUSTER.toString(), "down");
        assertNothingRemains();
        assertThat(DIR).doesNotExist();
    }

    /**
     * {@code up} stopped by SIGTERM (what Ctrl-C or a CI timeout sends) once its first node is starting: it takes
     * down what it had started, and nothing remains.
     */
    private void anInterruptedUpTakesItselfDown() throws Exception {
        Path log = Files.createTempFile("dilu-cluster-up", ".log");
        Process up = new ProcessBuilder(CLUSTER.toString(), "up", "--nodes", "1").redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        try {
            // The log line first: a pid file left by an earlier run (a machine stopped mid-run) is there before
            // `up` has cleared it, and a signal that early would find `up` without its trap.
            await(Duration.ofMinutes(5), () -> logOf(log).contains("starting node 1:")
                    && Files.exists(DIR.resolve("run/node1-kubelet.pid")) || !up.isAlive());
            assertThat(up.isAlive()).as("up was still starting the node: %s", Files.readString(log)).isTrue();
            up.toHandle().destroy(); // SIGTERM
            assertThat(up.waitFor(5, TimeUnit.MINUTES)).as("up took itself down").isTrue();
            assertThat(Files.readString(log)).contains("taking down what was started");
        } finally {
            up.destroyForcibly();
            Files.deleteIfExists(log);
        }
        assertNothingRemains();
    }

    private static String logOf(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Nothing of the cluster remains: no cgroup (a cgroup with a process in it cannot be removed, so no process
     * either), no bridge, no mount, no pid file of a live process.
     */
    private static void assertNothingRemains() throws Exception {
        try (var hierarchies = Files.list(Path.of("/sys/fs/cgroup"))) {
            for (Path h : hierarchies.toList()) {
                try (var dirs = Files.list(h)) {
                    assertThat(dirs.map(p -> p.getFileName().toString()))
                            .as("cgroups left in %s", h).noneMatch(n -> n.startsWith("dilu-"));
                }
            }
        }
        assertThat(run(Duration.ofSeconds(30), "ip", "-o", "link", "show")).doesNotContain("dilu-br");
        assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain("/var/lib/dilu-cluster")
                .doesNotContain(" /var/lib/kubelet ");
        assertThat(Files.exists(DIR.resolve("up"))).as("marked up").isFalse();
        assertThat(DIR.resolve("run")).doesNotExist();
    }

    @Test
    @Order(1)
    void aTrainingPodBesideAnInferencePodRunsAtItsGrant() throws Exception {
        // 30% each: their limits (60%) sum to 120%, within a GPU's 150%, so they may share one.
        gpuPod("infer", 30, 4096,
                "exec emu-infer --rate 100 --seconds 86400 --batch 8 --kernels 20 --blocks 108 --block-us 100");
        gpuPod("train", 30, 4096, "exec emu-train --seconds 600 --kernels 8 --blocks 432 --block-us 100 --gap-ms 1");
        Pod infer = running("infer");
        Pod train = running("train");
        assertThat(train.getMetadata().getAnnotations().get("dilu.io/assigned-gpus"))
                .as("complementary functions share a GPU")
                .isEqualTo(infer.getMetadata().getAnnotations().get("dilu.io/assigned-gpus"));

        // What the agent reports for the training container over 10 s: it runs at what it is granted. A Running pod
        // is not yet an exported one: the agent exports a container once the kubelet has named its share's owner
        // and its hook has attached, at a later scrape.
        await(Duration.ofMinutes(1), () -> grantedTo("train") >= 0);
        Map<String, Double> first = containerSeries("train");
        Thread.sleep(10_000);
        Map<String, Double> second = containerSeries("train");
        double launched = second.get("dilu_container_blocks_launched_total") - first.get("dilu_container_blocks_launched_total");
        double granted = second.get("dilu_container_tokens_granted_total") - first.get("dilu_container_tokens_granted_total");
        System.out.printf("training beside inference, 10 s: %.0f blocks launched, %.0f granted (emulated)%n", launched,
                granted);
        assertThat(granted).as("the agent granted the training container tokens").isPositive();
        assertThat(launched / granted).as("blocks launched against blocks granted").isBetween(0.9, 1.1);
    }

    @Test
    @Order(2)
    void memoryBeyondTheShareFailsInsideThePod() throws Exception {
        gpuPod("shell", 20, 2048, "exec sleep 3600");
        running("shell");
        String out = exec("shell", "dilu-probe alloc 3000 0");
        assertThat(out).as("3,000 MiB against a 2,048 MiB share: CUDA_ERROR_OUT_OF_MEMORY (2)")
                .contains("alloc=2").contains("total_mib=2048");
    }

    @Test
    @Order(3)
    void aProcessStartedWithoutLdPreloadIsStillThrottled() throws Exception {
        double rate = blocksPerSecond(exec("shell",
                "env -u LD_PRELOAD emu-train --seconds 3 --kernels 8 --blocks 432 --block-us 100"));
        // request 20%, limit 40% (the webhook's default of twice the request)
        assertThat(rate).isLessThanOrEqualTo(0.40 * MAX_TOKENS_PER_SECOND * 1.1);
    }

    /**
     * The node agent away, then back: a workload that starts while no agent refills the grant gets nothing (the hook
     * lends the agent's latest rate for at most 1 s past its last refill, then holds every launch), and the new agent
     * takes the same share over, from the same control block. The agent is held away by taking the node out of its
     * DaemonSet's selector and let back by putting it in again, so what is waited for is what is tested — not how fast
     * a deleted agent pod is replaced, which on a busy machine takes minutes.
     */
    @Test
    @Order(4)
    void withTheAgentAwayContainersStayThrottledAndTheNewAgentTakesThemOver() throws Exception {
        double before = grantedTo("shell");
        assertThat(before).as("the old agent exports the container's grant").isPositive();
        try {
            client.nodes().withName("127.0.0.1").edit(n -> new NodeBuilder(n).editMetadata().removeFromLabels(AGENT_NODE_LABEL)
                    .endMetadata().build());
            await(Duration.ofMinutes(3), () -> agentPods().isEmpty() && agentCounter("dilu_kubelet_registrations_total") < 0);
            exec("shell", "(emu-train --seconds 2 --kernels 8 --blocks 432 --block-us 100 > /tmp/away.out 2>&1 </dev/null & "
                    + "echo $! > /tmp/away.pid)");
            // Unthrottled, it would have ended after 2 s; it is waiting for tokens, however long the agent stays away.
            Thread.sleep(6_000);
            assertThat(exec("shell", "test -d /proc/$(cat /tmp/away.pid) && echo running; cat /tmp/away.out"))
                    .as("while the agent is away").startsWith("running").doesNotContain("RESULT");
        } finally {
            client.nodes().withName("127.0.0.1").edit(n -> new NodeBuilder(n).editMetadata().addToLabels(AGENT_NODE_LABEL, "true")
                    .endMetadata().build());
        }
        await(Duration.ofMinutes(5), this::agentReady);
        // The new agent exports the container's grant from the same control block: cumulative, so not below what
        // the old agent granted (a new share would start again from 0).
        await(Duration.ofMinutes(2), () -> grantedTo("shell") >= before);
        await(Duration.ofMinutes(2), () -> {
            try {
                return exec("shell", "cat /tmp/away.out").contains("RESULT");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        double rate = blocksPerSecond(exec("shell", "cat /tmp/away.out"));
        assertThat(rate).as("the held workload, released by the new agent, over its whole run")
                .isLessThanOrEqualTo(0.40 * MAX_TOKENS_PER_SECOND * 1.1);
        Map<String, Double> first = containerSeries("shell");
        exec("shell", "emu-train --seconds 2 --kernels 8 --blocks 432 --block-us 100");
        Map<String, Double> second = containerSeries("shell");
        assertThat(second.get("dilu_container_tokens_granted_total")).as("the new agent refills the same share")
                .isGreaterThan(first.get("dilu_container_tokens_granted_total"));
    }

    @Test
    @Order(5)
    void restartingTheKubeletKeepsEveryPlacementAndRegistersThePluginAgain() throws Exception {
        Map<String, String> placed = Map.of("infer", assigned("infer"), "train", assigned("train"), "shell", assigned("shell"));
        double registrations = agentCounter("dilu_kubelet_registrations_total");
        run(Duration.ofMinutes(1), CLUSTER.toString(), "restart-kubelet", "1");
        // The new kubelet knows no plugin: the agent sees its socket come back and registers again, and only
        // then are shares allocatable (a pod admitted before that fails: that is the kubelet's rule).
        await(Duration.ofMinutes(2), () -> agentCounter("dilu_kubelet_registrations_total") > registrations);
        await(Duration.ofMinutes(2), () -> "True".equals(nodeReady()) && new Quantity(Integer.toString(4 * DiluNames.GPU_SM_IDS_PER_GPU)).equals(client.nodes()
                .withName("127.0.0.1").get().getStatus().getAllocatable().get("dilu.io/gpu-sm")));
        gpuPod("after-restart", 10, 1024, "exec sleep 3600");
        running("after-restart"); // Allocate answered: the plugin registered with the new kubelet
        for (var e : placed.entrySet()) {
            assertThat(running(e.getKey()).getStatus().getContainerStatuses().getFirst().getRestartCount()).isZero();
            assertThat(assigned(e.getKey())).isEqualTo(e.getValue());
        }
    }

    /**
     * The autoscaler as installed, end to end: a Deployment of emulated inference servers that also serve
     * queue-proxy's Stat, a PodAutoscaler of Dilu's class, and a sustained load three times what one instance is
     * said to serve: the autoscaler (its RBAC, leader election, scrape and decision as shipped) scales it out.
     */
    @Test
    @Order(6)
    void theAutoscalerScalesADeploymentOnTheRateItsPodsReport() throws Exception {
        for (String crd : List.of("podautoscalers.autoscaling.internal.knative.dev.yaml",
                "serverlessservices.networking.internal.knative.dev.yaml")) {
            try (var in = LocalClusterIT.class.getResourceAsStream("/knative-crds/" + crd)) {
                var definition = client.apiextensions().v1().customResourceDefinitions().load(in).item();
                client.apiextensions().v1().customResourceDefinitions().resource(definition).serverSideApply();
                await(Duration.ofMinutes(1), () -> {
                    var c = client.apiextensions().v1().customResourceDefinitions()
                            .withName(definition.getMetadata().getName()).get();
                    return c.getStatus() != null && c.getStatus().getConditions().stream()
                            .anyMatch(k -> "Established".equals(k.getType()) && "True".equals(k.getStatus()));
                });
            }
        }
        String ns = "e2e-scale";
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns)
                .addToLabels("dilu.io/webhook", "enabled").addToLabels("dilu.io/allow-slo", "true").endMetadata().build())
                .serverSideApply();
        client.apps().deployments().inNamespace(ns).resource(new DeploymentBuilder().withNewMetadata().withName("echo")
                .endMetadata().withNewSpec().withReplicas(1).withNewSelector().addToMatchLabels("app", "echo").endSelector()
                .withNewTemplate().withNewMetadata().addToLabels("app", "echo")
                .addToLabels(KnativeNames.SERVICE_LABEL, "echo").addToLabels(KnativeNames.REVISION_LABEL, "echo")
                .endMetadata().withNewSpec().withTerminationGracePeriodSeconds(1L).addNewContainer().withName("server")
                .withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never")
                .withCommand("/bin/sh", "-c", "exec emu-serve --port 8080 --stats-port 9090 --batch 4 --kernels 2 --blocks 108")
                .withNewResources().addToLimits("dilu.io/gpu-sm", new Quantity("10"))
                .addToLimits("dilu.io/gpu-memory", new Quantity("1024")).endResources()
                .withNewReadinessProbe().withNewHttpGet().withPath("/healthz").withNewPort(8080).endHttpGet()
                .withPeriodSeconds(1).endReadinessProbe().endContainer().endSpec().endTemplate().endSpec().build())
                .serverSideApply();
        client.genericKubernetesResources(KnativeNames.PODAUTOSCALER_API_VERSION, KnativeNames.PODAUTOSCALER_KIND).inNamespace(ns)
                .resource(new GenericKubernetesResourceBuilder().withApiVersion(KnativeNames.PODAUTOSCALER_API_VERSION)
                        .withKind(KnativeNames.PODAUTOSCALER_KIND).withNewMetadata().withName("echo").withNamespace(ns)
                        .withAnnotations(Map.of(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS, DiluNames.SERVING_RPS, "10"))
                        .endMetadata().addToAdditionalProperties("spec", Map.of("protocolType", "http1", "scaleTargetRef",
                                Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", "echo"))).build())
                .serverSideApply();
        java.util.function.Supplier<List<URI>> ready = () -> client.pods().inNamespace(ns).withLabel("app", "echo").list()
                .getItems().stream().filter(p -> p.getStatus().getPodIP() != null && p.getStatus().getConditions().stream()
                        .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus())))
                .map(p -> URI.create("http://" + p.getStatus().getPodIP() + ":8080")).toList();
        await(Duration.ofMinutes(2), () -> !ready.get().isEmpty());

        double[] thirty = new double[60];
        java.util.Arrays.fill(thirty, 30);
        LoadGenerator load = new LoadGenerator(new RateTrace("steady", thirty), 1, ready,
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build(), LoadSettings.DEFAULTS, System::nanoTime)
                .start();
        // 30 rps against 10 per instance: once 20 of the 40 s window's seconds are above it, three instances.
        await(Duration.ofSeconds(90), () -> replicas(ns) >= 3);
        LoadResult result = load.finished().get(3, TimeUnit.MINUTES);
        assertThat(result.count()).isEqualTo(1800);
        assertThat(result.failures()).as("every request answered with a 2xx").isZero();
        client.namespaces().withName(ns).delete();
    }

    /**
     * The shipped profiler on the cluster: a GpuFunctionProfile with only a spec (the workload image, emu-infer's
     * trial mode) reaches Ready from trial pods that ran on the node's emulated GPU with their share pinned by the
     * token manager, and its trials say the GPU was emulated.
     */
    @Test
    @Order(7)
    void aProfileWithOnlyASpecIsProfiledByTrialPodsOnTheEmulatedGpu() throws Exception {
        String ns = "e2e-profile";
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns)
                .addToLabels("dilu.io/webhook", "enabled").endMetadata().build()).serverSideApply();
        client.resources(GpuFunctionProfile.class).inNamespace(ns).resource(new GpuFunctionProfile(
                new io.fabric8.kubernetes.api.model.ObjectMetaBuilder().withName("resnet").build(),
                ProfileSpec.toProfile("resnet", "inference", "dilu.local/workload:0.1.0", List.of("emu-infer", "--trial-batches", "3",
                        "--kernels", "4", "--blocks", "54", "--blocks-per-item", "27", "--block-us", "250", "--memory-mib", "1500",
                        "--memory-per-item-mib", "100"), 40, 16), null)).create();
        await(Duration.ofMinutes(8), () -> {
            GpuFunctionProfile p = client.resources(GpuFunctionProfile.class).inNamespace(ns).withName("resnet").get();
            return p.conditionTrue(GpuFunctionProfile.READY) || p.conditionTrue(GpuFunctionProfile.FAILED);
        });
        GpuFunctionProfile p = client.resources(GpuFunctionProfile.class).inNamespace(ns).withName("resnet").get();
        assertThat(p.conditionTrue(GpuFunctionProfile.READY)).as("%s", p.getStatus()).isTrue();
        assertThat(p.getStatus().trials()).hasSize(p.getStatus().searchTrials())
                .allSatisfy(t -> assertThat(t.gpu()).startsWith("emulated "));
        assertThat(p.getStatus().batchSize()).isBetween(1, 16);
        assertThat(client.pods().inNamespace(ns).list().getItems()).as("trial pods are deleted once measured").isEmpty();
        client.namespaces().withName(ns).delete();
    }

    /**
     * Parking on real kubelets, containerd and the emulated GPU (issue 35, item 4): a parked instance of an emulated
     * model (emu-serve, a 7 s model load as the co-scaling cluster bench's) wakes — from the autoscaler's write, which
     * the test makes as the autoscaler does ({@link ParkingPatch}), to the pod Ready again (the extender books its SMs
     * and sets dilu.io/serving, the kubelet reads the readiness gate) and answering an inference request — beside a cold
     * start (a new pod, from the scale write to its answer). Then its GPU is filled while it is parked, and its wake is
     * refused; deleted as the autoscaler deletes it, its replacement is placed on another GPU: a failed wake, counted by
     * the extender. The figures are printed (emulated GPU, this machine), and docs/benchmarks.md quotes them.
     */
    @Test
    @Order(8)
    void aParkedInstanceWakesWithinASecondAColdStartTakesSecondsAndAFailedWakeFailsOver() throws Exception {
        String ns = "e2e-park";
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns)
                .addToLabels("dilu.io/webhook", "enabled").addToLabels("dilu.io/allow-slo", "true").endMetadata().build())
                .serverSideApply();
        String model = "--load-ms 7000 --batch 2 --max-wait-ms 5 --kernels 10 --blocks 1080 --block-us 100";
        // Pods of Dilu's class: the webhook gives them the readiness gate on dilu.io/serving.
        ServingFunction.deploy(client, ns, "fn", 1, 20, 2048, ServingFunction.DILU_SCALED, model);
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        awaitPods(ns, 1, Duration.ofMinutes(3));
        assertThat(podsOf(ns).getFirst().getSpec().getReadinessGates()).extracting(g -> g.getConditionType())
                .as("the webhook's gate").containsExactly(DiluNames.SERVING_CONDITION);

        List<Double> coldStarts = new java.util.ArrayList<>();
        for (int replicas = 2; replicas <= 3; replicas++) {
            Set<String> before = names(podsOf(ns));
            long asked = System.nanoTime();
            client.apps().deployments().inNamespace(ns).withName("fn").scale(replicas);
            Pod fresh = awaitNewPod(ns, before);
            coldStarts.add(answeredAfter(ns, fresh.getMetadata().getName(), asked, http, new java.util.ArrayList<>()));
        }

        // A pod of another function serving beside the one parked: a GPU that parked pods alone hold is handed back at
        // once (the extender deletes them). Placed beside partners first (Algorithm 1), it lands on one of fn's GPUs.
        client.pods().inNamespace(ns).resource(new PodBuilder().withNewMetadata().withName("keeper").endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L).addNewContainer().withName("keeper")
                .withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never").withCommand("/bin/sh", "-c", "exec sleep 3600")
                .withNewResources().addToLimits(DiluNames.GPU_SM, new Quantity("10"))
                .addToLimits(DiluNames.GPU_MEMORY, new Quantity("1024")).endResources().endContainer().endSpec().build())
                .create();
        await(Duration.ofMinutes(2), () -> annotation(ns, "keeper", DiluNames.ASSIGNED_GPUS) != null);
        String keeperGpu = annotation(ns, "keeper", DiluNames.ASSIGNED_GPUS);
        List<Pod> fnPods = podsOf(ns);
        String parked = fnPods.stream().filter(p -> keeperGpu.equals(p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS)))
                .map(p -> p.getMetadata().getName()).reduce((a, b) -> b).orElseThrow(() -> new AssertionError(
                        "the keeper on " + keeperGpu + " is beside none of fn's pods: " + fnPods.stream().map(p -> p.getMetadata()
                                .getName() + "=" + p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS)).toList()));
        List<Double> wakes = new java.util.ArrayList<>();
        List<Double> booked = new java.util.ArrayList<>();
        for (int i = 0; i < 5; i++) {
            park(ns, parked);
            // Parked for a while, as between the end of a burst and the next: a wake right after the kubelet's sync
            // for the park waits for its next relist of the containers (every second) before it writes Ready.
            Thread.sleep(3_000);
            long asked = wake(ns, parked);
            wakes.add(answeredAfter(ns, parked, asked, http, booked));
        }

        // Its GPU filled while it is parked: a pod that takes what is left there of Ω or of γ, whichever is less, as
        // the node agent books it (parked shares left out); best fit puts it there, the fullest GPU it fits.
        park(ns, parked);
        String gpu = client.pods().inNamespace(ns).withName(parked).get().getMetadata().getAnnotations()
                .get(DiluNames.ASSIGNED_GPUS);
        int leftRequest = (int) Math.round(100 - 100 * gpuRatio("dilu_gpu_sm_request_ratio", gpu));
        int leftLimit = (int) Math.round(150 - 100 * gpuRatio("dilu_gpu_sm_limit_ratio", gpu));
        int hog = Math.min(Math.min(leftRequest, leftLimit), 100);
        if (hog >= 1) {
            client.pods().inNamespace(ns).resource(new PodBuilder().withNewMetadata().withName("hog")
                    .addToAnnotations(DiluNames.SM_LIMIT, Integer.toString(Math.min(100, leftLimit))).endMetadata()
                    .withNewSpec().withTerminationGracePeriodSeconds(1L).addNewContainer().withName("hog")
                    .withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never").withCommand("/bin/sh", "-c", "exec sleep 3600")
                    .withNewResources().addToLimits(DiluNames.GPU_SM, new Quantity(Integer.toString(hog)))
                    .addToLimits(DiluNames.GPU_MEMORY, new Quantity("1024")).endResources().endContainer().endSpec().build())
                    .create();
            try {
                await(Duration.ofMinutes(2), () -> annotation(ns, "hog", DiluNames.ASSIGNED_GPUS) != null);
            } finally {
                assertThat(annotation(ns, "hog", DiluNames.ASSIGNED_GPUS)).as("the hog (%d%%, limit %d%%) on the parked "
                        + "pod's GPU", hog, Math.min(100, leftLimit)).isEqualTo(gpu);
            }
        }
        Set<String> before = names(podsOf(ns));
        long asked = wake(ns, parked);
        long refusedAt = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (annotation(ns, parked, DiluNames.WAKE_FAILED) == null) {
            assertThat(System.nanoTime()).as("the wake refused within 30 s").isLessThan(refusedAt);
            Thread.sleep(10);
        }
        double refused = (System.nanoTime() - asked) / 1e9;
        String why = annotation(ns, parked, DiluNames.WAKE_FAILED);
        try (KubernetesClient autoscaler = asAutoscaler()) {
            autoscaler.pods().inNamespace(ns).withName(parked).delete(); // as the autoscaler deletes it
        }
        Pod replacement = awaitNewPod(ns, before);
        double failover = answeredAfter(ns, replacement.getMetadata().getName(), asked, http, new java.util.ArrayList<>());
        assertThat(why).startsWith("no room to serve again: GPU " + gpu + " would hold SM request");
        assertThat(annotation(ns, replacement.getMetadata().getName(), DiluNames.ASSIGNED_GPUS)).as("another GPU")
                .isNotEqualTo(gpu);
        assertThat(MetricsPage.read(URI.create("http://127.0.0.1:9082/q/metrics"), Duration.ofSeconds(10)))
                .containsPattern("dilu_extender_wakes_total\\{[^}]*result=\"failed\"[^}]*} [1-9]");

        System.out.printf("parking (emulated GPU, this machine): wake to answer %s s (the extender's condition seen after %s "
                + "s); cold start (scale write to answer) %s s; failed wake: refused within %.2f s, the replacement on another "
                + "GPU answered %.2f s after the wake (%s)%n", seconds(wakes), seconds(booked), seconds(coldStarts), refused,
                failover, why);
        client.namespaces().withName(ns).delete();
    }

    private static String seconds(List<Double> values) {
        return values.stream().map(v -> String.format(java.util.Locale.ROOT, "%.2f", v))
                .collect(java.util.stream.Collectors.joining(", ", "[", "]"));
    }

    private List<Pod> podsOf(String ns) {
        return client.pods().inNamespace(ns).withLabel("app", "fn").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .sorted(java.util.Comparator.comparing(p -> p.getMetadata().getCreationTimestamp())).toList();
    }

    private static Set<String> names(List<Pod> pods) {
        return pods.stream().map(p -> p.getMetadata().getName()).collect(java.util.stream.Collectors.toSet());
    }

    private void awaitPods(String ns, int count, Duration limit) {
        await(limit, () -> podsOf(ns).stream().filter(io.fabric8.kubernetes.client.readiness.Readiness::isPodReady).count() >= count);
    }

    private Pod awaitNewPod(String ns, Set<String> before) {
        Pod[] found = new Pod[1];
        await(Duration.ofMinutes(1), () -> {
            found[0] = podsOf(ns).stream().filter(p -> !before.contains(p.getMetadata().getName())).findFirst().orElse(null);
            return found[0] != null;
        });
        return found[0];
    }

    private String annotation(String ns, String pod, String key) {
        Pod p = client.pods().inNamespace(ns).withName(pod).get();
        return p == null || p.getMetadata().getAnnotations() == null ? null : p.getMetadata().getAnnotations().get(key);
    }

    /**
     * The API as the autoscaler has it: its ServiceAccount, impersonated, so that its RBAC and the webhook's rule on who
     * may park are what is tested.
     */
    private KubernetesClient asAutoscaler() {
        return KubeClients.of(new io.fabric8.kubernetes.client.ConfigBuilder(client.getConfiguration())
                .withImpersonateUsername("system:serviceaccount:dilu-system:dilu-autoscaler").build());
    }

    /** Parked as the autoscaler parks (annotation, condition False); waits until the kubelet says it is not Ready. */
    private void park(String ns, String name) {
        Pod p = client.pods().inNamespace(ns).withName(name).get();
        try (KubernetesClient autoscaler = asAutoscaler()) {
            autoscaler.pods().inNamespace(ns).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                    ParkingPatch.park(p.getMetadata().getUid(), java.time.Instant.now()));
            autoscaler.pods().inNamespace(ns).withName(name).subresource("status").patch(PatchContext.of(PatchType.JSON),
                    ParkingPatch.servingCondition(p.getMetadata().getUid(), p.getStatus().getConditions(), false, "Parked", "parked", java.time.Instant.now()));
        }
        await(Duration.ofSeconds(30), () -> !io.fabric8.kubernetes.client.readiness.Readiness.isPodReady(
                client.pods().inNamespace(ns).withName(name).get()));
    }

    /** Woken as the autoscaler wakes; returns when it wrote, System.nanoTime(). */
    private long wake(String ns, String name) {
        String uid = client.pods().inNamespace(ns).withName(name).get().getMetadata().getUid();
        try (KubernetesClient autoscaler = asAutoscaler()) {
            long asked = System.nanoTime();
            autoscaler.pods().inNamespace(ns).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE),
                    ParkingPatch.wake(uid, java.time.Instant.now()));
            return asked;
        }
    }

    /**
     * Seconds from {@code askedNanos} until the pod, once Ready (in its Service's endpoints), answered an inference
     * request sent to it: its readiness polled every 10 ms, the request sent at once. When its {@code dilu.io/serving}
     * condition was first seen True on the way is added to {@code servingSeen} (seconds from {@code askedNanos}).
     */
    private double answeredAfter(String ns, String name, long askedNanos, HttpClient http, List<Double> servingSeen)
            throws Exception {
        long until = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        boolean seen = false;
        while (true) {
            Pod p = client.pods().inNamespace(ns).withName(name).get();
            if (!seen && p != null && io.dilu.kube.PodShares.serving(p)) {
                seen = true;
                servingSeen.add((System.nanoTime() - askedNanos) / 1e9);
            }
            if (p != null && ServingFunction.target(p).isPresent()) {
                var answer = http.send(java.net.http.HttpRequest.newBuilder(ServingFunction.target(p).get().resolve("/infer"))
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{}")).build(),
                        java.net.http.HttpResponse.BodyHandlers.discarding());
                assertThat(answer.statusCode()).isEqualTo(200);
                return (System.nanoTime() - askedNanos) / 1e9;
            }
            if (System.nanoTime() >= until) {
                throw new AssertionError("pod " + name + " not Ready within 2 minutes; " + diagnosis(ns, name));
            }
            Thread.sleep(10);
        }
    }

    /**
     * What the cluster says of a pod that did not become Ready, for a failure that a later run may not show again (the
     * cluster is taken down after the tests): its Dilu annotations, conditions and containers, its events, and the lines
     * of Dilu's components' logs that name it or the node agent's backstop.
     */
    private String diagnosis(String ns, String name) {
        StringBuilder out = new StringBuilder();
        Pod p = client.pods().inNamespace(ns).withName(name).get();
        if (p == null) {
            return "the pod is gone";
        }
        // Any of these may be absent from a pod the kubelet has not reported on: the diagnosis must not end in a
        // NullPointerException that hides the failure it reports.
        out.append("annotations ").append(Optional.ofNullable(p.getMetadata().getAnnotations()).orElse(Map.of()).entrySet()
                .stream().filter(e -> e.getKey().startsWith("dilu.io/")).toList());
        var status = Optional.ofNullable(p.getStatus());
        out.append("; conditions ").append(status.map(PodStatus::getConditions).orElse(List.of()).stream()
                .map(c -> c.getType() + "=" + c.getStatus() + (c.getReason() == null ? "" : "/" + c.getReason()) + "@"
                        + c.getLastTransitionTime()).toList());
        out.append("; containers ").append(status.map(PodStatus::getContainerStatuses).orElse(List.of()).stream()
                .map(c -> c.getName() + " ready=" + c.getReady() + " restarts=" + c.getRestartCount() + " state=" + c.getState())
                .toList());
        out.append("; events ").append(client.v1().events().inNamespace(ns).list().getItems().stream()
                .filter(e -> name.equals(e.getInvolvedObject().getName()))
                .map(e -> e.getLastTimestamp() + " " + e.getReason() + ": " + e.getMessage()).toList());
        for (Pod component : client.pods().inNamespace("dilu-system").list().getItems()) {
            for (var c : component.getSpec().getContainers()) {
                try {
                    String log = client.pods().inNamespace("dilu-system").withName(component.getMetadata().getName())
                            .inContainer(c.getName()).tailingLines(2_000).getLog();
                    List<String> lines = log.lines().filter(l -> l.contains(name) || l.contains("backstop")).toList();
                    out.append("\n").append(component.getMetadata().getName()).append('/').append(c.getName()).append(": ")
                            .append(String.join("\n  ", lines.subList(Math.max(0, lines.size() - 30), lines.size())));
                } catch (RuntimeException e) {
                    out.append("\n").append(component.getMetadata().getName()).append(": no log (").append(e.getMessage()).append(')');
                }
            }
        }
        return out.toString();
    }

    /** A per-GPU ratio of the node agent's ({@code dilu_gpu_sm_request_ratio}, parked shares left out), from its metrics. */
    private static double gpuRatio(String metric, String gpu) throws Exception {
        Matcher m = Pattern.compile("^" + metric + "\\{gpu=\"" + Pattern.quote(gpu) + "\"[^}]*} ([0-9.eE+-]+)$",
                Pattern.MULTILINE).matcher(agentMetrics());
        assertThat(m.find()).as("the agent exports %s of %s", metric, gpu).isTrue();
        return Double.parseDouble(m.group(1));
    }

    private int replicas(String ns) {
        var d = client.apps().deployments().inNamespace(ns).withName("echo").get();
        return d == null || d.getSpec().getReplicas() == null ? 0 : d.getSpec().getReplicas();
    }

    // ---- helpers ----

    private void gpuPod(String name, int sm, int memoryMib, String script) {
        Pod pod = new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L)
                .addNewContainer().withName(name).withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never")
                .withCommand("/bin/sh", "-c", script)
                .withNewResources()
                .addToLimits("dilu.io/gpu-sm", new Quantity(Integer.toString(sm)))
                .addToLimits("dilu.io/gpu-memory", new Quantity(Integer.toString(memoryMib)))
                .endResources().endContainer().endSpec().build();
        client.pods().inNamespace(NS).resource(pod).create();
    }

    private Pod running(String name) {
        try {
            await(Duration.ofMinutes(2), () -> {
                Pod p = client.pods().inNamespace(NS).withName(name).get();
                return p != null && "Running".equals(p.getStatus().getPhase());
            });
        } catch (AssertionError e) {
            throw new AssertionError("pod " + name + " not Running: " + client.pods().inNamespace(NS).withName(name).get()
                    .getStatus() + "\nevents: " + client.v1().events().inNamespace(NS).list().getItems().stream()
                    .filter(ev -> name.equals(ev.getInvolvedObject().getName())).map(ev -> ev.getReason() + ": " + ev.getMessage())
                    .toList(), e);
        }
        return client.pods().inNamespace(NS).withName(name).get();
    }

    private String assigned(String pod) {
        return client.pods().inNamespace(NS).withName(pod).get().getMetadata().getAnnotations().get("dilu.io/assigned-gpus");
    }

    private String nodeReady() {
        return client.nodes().withName("127.0.0.1").get().getStatus().getConditions().stream()
                .filter(c -> c.getType().equals("Ready")).map(c -> c.getStatus()).findFirst().orElse("");
    }

    private List<Pod> agentPods() {
        return client.pods().inNamespace("dilu-system").withLabel("app.kubernetes.io/name", "dilu-node-agent").list().getItems();
    }

    private boolean agentReady() {
        return agentPods().stream().anyMatch(p -> p.getMetadata().getDeletionTimestamp() == null && p.getStatus()
                .getConditions().stream().anyMatch(c -> c.getType().equals("Ready") && c.getStatus().equals("True")));
    }

    private String exec(String pod, String command) throws Exception {
        return run(Duration.ofMinutes(1), RealApiServer.kubectl().toString(), "--kubeconfig",
                DIR.resolve("admin.kubeconfig").toString(), "-n", NS, "exec", pod, "--", "/bin/sh", "-c", command + " 2>&1");
    }

    private static double blocksPerSecond(String out) {
        Matcher m = Pattern.compile("blocks_per_second=([0-9.]+)").matcher(out);
        assertThat(m.find()).as(out).isTrue();
        return Double.parseDouble(m.group(1));
    }

    private static final Pattern SERIES = Pattern.compile(
            "^(dilu_container_[a-z_]+)\\{([^}]*)} ([0-9.eE+-]+)$", Pattern.MULTILINE);

    /** The agent's per-container series of a pod, from its metrics on the node's address. */
    private Map<String, Double> containerSeries(String pod) throws Exception {
        String body = agentMetrics();
        Map<String, Double> series = new java.util.HashMap<>();
        Matcher m = SERIES.matcher(body);
        while (m.find()) {
            if (m.group(2).contains("pod=\"" + pod + "\"") && m.group(2).contains("namespace=\"" + NS + "\"")) {
                series.put(m.group(1), Double.parseDouble(m.group(3)));
            }
        }
        return series;
    }

    /** The node agent's metrics, from its address on node 1. */
    private static String agentMetrics() throws IOException, InterruptedException {
        return MetricsPage.read(URI.create("http://127.0.0.1:8081/q/metrics"), Duration.ofSeconds(10));
    }

    /** A counter of the node agent's, or -1 while it does not answer. */
    private double agentCounter(String name) {
        try {
            Matcher m = Pattern.compile("^" + name + " ([0-9.eE+-]+)$", Pattern.MULTILINE)
                    .matcher(agentMetrics());
            return m.find() ? Double.parseDouble(m.group(1)) : -1;
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    /** The thread blocks the agent has granted the pod's container so far, or -1 while it does not export them. */
    private double grantedTo(String pod) {
        try {
            return containerSeries(pod).getOrDefault("dilu_container_tokens_granted_total", -1.0);
        } catch (Exception e) {
            return -1; // the agent is restarting
        }
    }

    private static void await(Duration limit, BooleanSupplier condition) {
        long until = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waited %s", limit).isLessThan(until);
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** Runs a command to its end or its limit; its output goes to a file, so a child it leaves behind cannot hold us. */
    private static String run(Duration limit, String... command) throws Exception {
        Path out = Files.createTempFile("dilu-cluster-it", ".log");
        try {
            Process p = new ProcessBuilder(List.of(command)).redirectErrorStream(true).redirectOutput(out.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
            boolean finished = p.waitFor(limit.toSeconds(), TimeUnit.SECONDS);
            if (!finished) {
                p.destroyForcibly();
            }
            String text = Files.readString(out, StandardCharsets.UTF_8);
            assertThat(finished).as("%s finished within %s: %s", List.of(command), limit, text).isTrue();
            assertThat(p.exitValue()).as("%s: %s", List.of(command), text).isZero();
            return text;
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
