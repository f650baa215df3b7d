package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.TestApiServer;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extender behind a real kube-scheduler, configured from {@code manifests/scheduler-extender}, against a
 * real kube-apiserver: 200 seeded random GPU pods land on nodes and GPUs within Ω, γ and memory (checked from
 * the API server); the extender is restarted halfway and loses nothing; an impossible pod stays Pending with a
 * reason a user can read, and in a DiluRefused event (each placed pod gets one DiluPlaced). An LLM pod opted in to
 * pipeline splitting is cut over fragments of one node's GPUs.
 */
class SchedulerExtenderIT {

    static final String NS = "fns";
    static final int NODES = 24;
    static final int GPUS_PER_NODE = 4;
    static final long GPU_MEMORY = 40_960;
    @RegisterExtension
    static final TestApiServer API = TestApiServer.withNamespaces(NS);
    static RealApiServer api;
    static KubernetesClient client;

    @TempDir
    static Path tmp;
    /** Process logs stay after the run, for whoever reads a failure. */
    static final Path LOGS = TestApiServer.LOGS;

    @BeforeAll
    static void start() throws IOException {
        api = API.api();
        client = API.client();
    }

    /**
     * The pod's PodScheduled condition, asserted unbound and False. Until kube-scheduler's first attempt the pod has no
     * such condition: an AssertionError (not yet), which {@code untilAsserted} retries, rather than a wrong answer.
     */
    static PodCondition unschedulable(String namespace, String name) {
        Pod p = client.pods().inNamespace(namespace).withName(name).get();
        assertThat(p.getSpec().getNodeName()).isNull();
        PodCondition scheduled = p.getStatus().getConditions().stream().filter(c -> "PodScheduled".equals(c.getType()))
                .findFirst().orElseThrow(() -> new AssertionError("kube-scheduler has not tried the pod yet"));
        assertThat(scheduled.getStatus()).isEqualTo("False");
        return scheduled;
    }

    static int freePort() throws IOException {
        return LocalControlPlane.freePort();
    }

    static List<GpuDevice> gpus(String node) {
        return IntStream.range(0, GPUS_PER_NODE)
                .mapToObj(i -> new GpuDevice("GPU-" + node + "-" + i, i, "A100-40GB", GPU_MEMORY, 108)).toList();
    }

    static void createNode(String name) {
        LocalControlPlane.createGpuNode(client, name, gpus(name));
    }

    static Pod gpuPod(String name, String function, int sm, long memoryMib, Integer limit, int containers) {
        Map<String, String> annotations = new HashMap<>(Map.of(DiluNames.FUNCTION, function));
        if (limit != null) {
            annotations.put(DiluNames.SM_LIMIT, limit.toString());
        }
        PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).withAnnotations(annotations)
                .endMetadata().withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME)
                .withAutomountServiceAccountToken(false).endSpec();
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        for (int c = 0; c < containers; c++) {
            b.editSpec().addNewContainer().withName("c" + c).withImage("registry.local/" + function + ":1")
                    .withNewResources().withRequests(share).withLimits(share).endResources().endContainer().endSpec();
        }
        return client.pods().inNamespace(NS).resource(b.build()).create();
    }

    static ChildProcess startExtender(Path kubeconfig, int port, String log) throws Exception {
        return LocalControlPlane.startExtender(kubeconfig, port, LOGS.resolve(log));
    }

    static List<Pod> gpuPods() {
        return client.pods().inNamespace(NS).list().getItems().stream()
                .filter(p -> DiluNames.SCHEDULER_NAME.equals(p.getSpec().getSchedulerName())).toList();
    }

    /** Dilu's events of {@code reason} in the namespace, counted per pod. */
    static Map<String, Long> diluEvents(String reason) {
        return client.v1().events().inNamespace(NS).list().getItems().stream().filter(e -> reason.equals(e.getReason()))
                .collect(java.util.stream.Collectors.groupingBy(e -> e.getInvolvedObject().getName(),
                        java.util.stream.Collectors.counting()));
    }

    static void awaitBound(int expected) {
        await().atMost(Duration.ofSeconds(Long.getLong("dilu.it.bind-timeout-s", 180))).pollInterval(Duration.ofMillis(500)).untilAsserted(() ->
                assertThat(gpuPods().stream().filter(p -> p.getSpec().getNodeName() != null).count())
                        .as("pods bound").isEqualTo(expected));
    }

    @Test
    void placesRandomPodsWithinEveryCapSurvivesARestartAndExplainsAnImpossiblePod() throws Exception {
        IntStream.range(0, NODES).forEach(i -> createNode("gpu-node-" + i));
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));
        int port = freePort();
        ChildProcess extender = startExtender(kubeconfig, port, "extender-1.log");
        ChildProcess scheduler = LocalControlPlane.startScheduler(client, kubeconfig, port, tmp, LOGS.resolve("kube-scheduler.log"));
        try {
            Random rnd = new Random(20261122);
            int[] shares = {10, 15, 20, 25, 30, 40, 50};
            long[] memories = {1024, 2048, 4096, 8192, 12288};
            List<String> names = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                if (i == 100) {
                    awaitBound(100);
                    Map<String, String> before = assignments();
                    extender.stop(Duration.ofSeconds(10));
                    extender = startExtender(kubeconfig, port, "extender-2.log");
                    assertThat(assignments()).as("a restart rewrites no assignment").isEqualTo(before);
                }
                int sm = shares[rnd.nextInt(shares.length)];
                Integer limit = rnd.nextBoolean() ? null : Math.min(100, sm + rnd.nextInt(60));
                int containers = rnd.nextInt(10) == 0 ? 2 : 1;
                String name = "fn-" + i;
                gpuPod(name, "f" + rnd.nextInt(8), sm, memories[rnd.nextInt(memories.length)], limit, containers);
                names.add(name);
            }
            awaitBound(200);
            verifyCapsFromTheApiServer();

            // An impossible pod: more memory than any GPU has.
            gpuPod("too-big", "huge", 20, 100_000, null, 1);
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                PodCondition scheduled = unschedulable(NS, "too-big");
                assertThat(scheduled.getMessage()).contains("100000 MiB").contains("largest GPU has 40960 MiB");
            });
            // The pods are told too (Events): where each went, and why the impossible one stays (how often that is
            // written, whatever kube-scheduler's retries, ExtenderEventsIT checks on a clock of its own).
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                Map<String, Long> placed = diluEvents("DiluPlaced");
                assertThat(placed).as("one DiluPlaced per pod").hasSize(200).allSatisfy((pod, n) -> assertThat(n).isEqualTo(1));
                assertThat(diluEvents("DiluRefused")).containsKey("too-big");
            });
            assertThat(client.v1().events().inNamespace(NS).list().getItems().stream()
                    .filter(e -> "DiluRefused".equals(e.getReason())).findFirst().orElseThrow().getMessage())
                    .startsWith("no node can take the pod: ").contains("100000 MiB");
        } finally {
            scheduler.close();
            extender.close();
        }
    }

    /**
     * An LLM pod that no single GPU has the memory for, opted in with {@code dilu.io/split: pipeline}, is cut into
     * stages over fragments of two GPUs of one node, whose shares add up to what it asked; one that even the
     * node's fragments cannot hold stays Pending with the reason. On a node of its own (tainted, so the other
     * test's pods stay off it).
     */
    @Test
    void splitsAPipelinePodOverFragmentsOfOneNodeAndExplainsWhenTheyAreTooFew() throws Exception {
        String ns = "split";
        String node = "split-node";
        api.createNamespace(ns, Map.of());
        createNode(node);
        client.nodes().withName(node).edit(n -> {
            Map<String, String> labels = new HashMap<>(n.getMetadata().getLabels() == null ? Map.of() : n.getMetadata().getLabels());
            labels.put("dilu.io/test", "split");
            n.getMetadata().setLabels(labels);
            n.getSpec().setTaints(List.of(new io.fabric8.kubernetes.api.model.TaintBuilder().withKey("dilu.io/test")
                    .withValue("split").withEffect("NoSchedule").build()));
            return n;
        });
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig-split"));
        int port = freePort();
        ChildProcess extender = startExtender(kubeconfig, port, "extender-split.log");
        ChildProcess scheduler = LocalControlPlane.startScheduler(client, kubeconfig, port, tmp,
                LOGS.resolve("kube-scheduler-split.log"));
        try {
            // 25 GB on each GPU: every GPU keeps 15 GB free, too little for a 24 GB model on one GPU.
            for (int i = 0; i < GPUS_PER_NODE; i++) {
                onSplitNode(ns, "filler-" + i, "filler-" + i, 20, 25_600, Map.of());
            }
            awaitPhaseBound(ns, GPUS_PER_NODE);
            onSplitNode(ns, "llm", "llm", 20, 24_576, Map.of(DiluNames.SPLIT, DiluNames.SPLIT_PIPELINE));
            awaitPhaseBound(ns, GPUS_PER_NODE + 1);
            Pod llm = client.pods().inNamespace(ns).withName("llm").get();
            assertThat(llm.getSpec().getNodeName()).isEqualTo(node);
            AssignedGpus stages = AssignedGpus.parse(llm.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS));
            assertThat(stages.isSplit()).isTrue();
            assertThat(stages.stages()).hasSize(2).allMatch(s -> s.uuid().startsWith("GPU-" + node + "-"));
            assertThat(stages.splitPercent()).as("the stages add up to the pod's dilu.io/gpu-sm").isEqualTo(20);
            assertThat(stages.stages().stream().mapToLong(AssignedGpus.Stage::memoryMib).sum()).isEqualTo(24_576);
            assertThat(stages.stages().getFirst().memoryMib()).as("worst fit: a whole fragment first").isEqualTo(15_360);

            // 36 GB are left in fragments of at most 15 GB, too few for 40 GB: Pending, with the reason.
            onSplitNode(ns, "llm-too-big", "llm-big", 20, 40_960, Map.of(DiluNames.SPLIT, DiluNames.SPLIT_PIPELINE));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                PodCondition scheduled = unschedulable(ns, "llm-too-big");
                assertThat(scheduled.getMessage()).contains("40960 MiB").contains("pipeline stages");
            });
        } finally {
            scheduler.close();
            extender.close();
        }
    }

    static void onSplitNode(String ns, String name, String function, int sm, long memoryMib, Map<String, String> extra) {
        Map<String, String> annotations = new HashMap<>(extra);
        annotations.put(DiluNames.FUNCTION, function);
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        client.pods().inNamespace(ns).resource(new PodBuilder().withNewMetadata().withName(name).withNamespace(ns)
                .withAnnotations(annotations).endMetadata().withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME)
                .withAutomountServiceAccountToken(false).withNodeSelector(Map.of("dilu.io/test", "split"))
                .addNewToleration().withKey("dilu.io/test").withValue("split").withEffect("NoSchedule").endToleration()
                .addNewContainer().withName("c0").withImage("registry.local/" + function + ":1")
                .withNewResources().withRequests(share).withLimits(share).endResources().endContainer().endSpec()
                .build()).create();
    }

    static void awaitPhaseBound(String ns, int expected) {
        await().atMost(Duration.ofSeconds(Long.getLong("dilu.it.bind-timeout-s", 180))).pollInterval(Duration.ofMillis(500))
                .untilAsserted(() -> assertThat(client.pods().inNamespace(ns).list().getItems().stream()
                        .filter(p -> p.getSpec().getNodeName() != null).count()).as("pods bound in %s", ns).isEqualTo(expected));
    }

    static Map<String, String> assignments() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Pod p : gpuPods()) {
            if (p.getSpec().getNodeName() != null) {
                out.put(p.getMetadata().getName(), p.getSpec().getNodeName() + " " + p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS));
            }
        }
        return out;
    }

    /** Σrequest ≤ Ω = 100%, Σlimit ≤ γ = 150%, Σmemory ≤ capacity on every GPU, and every GPU on its pod's node. */
    static void verifyCapsFromTheApiServer() {
        Map<String, long[]> perGpu = new HashMap<>();
        for (Pod p : gpuPods()) {
            String node = p.getSpec().getNodeName();
            AssignedGpus gpus = AssignedGpus.parse(p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS));
            var containers = p.getSpec().getContainers();
            assertThat(gpus.uuids()).as("pod %s gets a GPU per container", p.getMetadata().getName())
                    .hasSize(containers.size());
            for (int i = 0; i < containers.size(); i++) {
                String gpu = gpus.forContainer(i).orElseThrow();
                assertThat(gpu).as("GPU of %s", p.getMetadata().getName()).startsWith("GPU-" + node + "-");
                var requests = containers.get(i).getResources().getRequests();
                int sm = requests.get(DiluNames.GPU_SM).getNumericalAmount().intValueExact();
                long memory = requests.get(DiluNames.GPU_MEMORY).getNumericalAmount().longValueExact();
                String limit = p.getMetadata().getAnnotations().get(DiluNames.SM_LIMIT);
                long[] sum = perGpu.computeIfAbsent(gpu, g -> new long[3]);
                sum[0] += sm;
                sum[1] += limit == null ? Math.min(100, 2 * sm) : Integer.parseInt(limit);
                sum[2] += memory;
            }
        }
        assertThat(perGpu).isNotEmpty();
        perGpu.forEach((gpu, sum) -> {
            assertThat(sum[0]).as("Σrequest on %s", gpu).isLessThanOrEqualTo(100);
            assertThat(sum[1]).as("Σlimit on %s", gpu).isLessThanOrEqualTo(150);
            assertThat(sum[2]).as("Σmemory on %s", gpu).isLessThanOrEqualTo(GPU_MEMORY);
        });
        // Consolidation: Dilu packs, so far fewer GPUs than pods are in use.
        assertThat(perGpu.size()).isLessThan(NODES * GPUS_PER_NODE);
    }
}
