package io.dilu.e2e.bench;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * {@code ./dilu bench extender}: the extender as deployed (its own process, its state from a real
 * kube-apiserver holding 1,000 GPU nodes of 8 GPUs and 2,000 bound GPU pods), asked over loopback HTTP what
 * kube-scheduler asks for every pod: filter, then prioritize, with all 1,000 node names. Prints the latency of
 * the pair. The pods asked about exist on the API server (pending), since the extender places no pod it cannot
 * find there. Before each pair, on the same connection, the reference: the same body sent twice to prioritize
 * while the pod holds no reservation yet, which the extender reads in full and answers with no placement.
 *
 * <p>The bar: the pair's p99 at most 10 ms. Missed, it prints a {@code FAIL:} line and exits 1 (not judged in a smoke
 * run, too short to judge a timing on a busy machine).
 *
 * <p>Usage: {@code ExtenderBench [ROUNDS] | --smoke} (1,000 nodes, 2,000 rounds after 1,000 warm-up rounds; smoke:
 * 50 nodes, 300 rounds after 300).
 */
public final class ExtenderBench {

    static final int GPUS = 8;
    /** Bound GPU pods per node, on GPUs chosen at random. */
    static final int BOUND_PER_NODE = 2;
    static final LatencyBar BAR = new LatencyBar(10);

    private ExtenderBench() {}

    public static void main(String[] args) throws Exception {
        int nodes = 1000;
        int rounds = 2000;
        int warmup = 1000;
        boolean smoke = args.length == 1 && args[0].equals("--smoke");
        if (smoke) {
            nodes = 50;
            rounds = 300;
            warmup = 300;
        } else if (args.length == 1) {
            rounds = Integer.parseInt(args[0]);
            warmup = Math.max(1000, rounds / 2);
        } else if (args.length > 1) {
            throw new IllegalArgumentException("usage: ExtenderBench [ROUNDS] | --smoke");
        }
        int exit = run(nodes, rounds, warmup, !smoke);
        if (exit != 0) {
            System.exit(exit);
        }
    }

    /** Returns 0, or 1 when {@code judge} and the p99 of filter + prioritize missed the bar. */
    static int run(int nodes, int rounds, int warmup, boolean judge) throws Exception {
        Path work = Files.createTempDirectory("dilu-bench-extender");
        try (RealApiServer api = RealApiServer.start()) {
            KubernetesClient client = api.client();
            long t0 = System.nanoTime();
            populate(api, nodes);
            Random rnd = new Random(7);
            List<Pod> asked = createPending(client, IntStream.range(0, warmup + rounds)
                    .mapToObj(i -> new int[] {10 + rnd.nextInt(30), 1024 * (1 + rnd.nextInt(8))}).toList());
            System.out.printf("cluster: %d nodes × %d GPUs, %d bound GPU pods, %d pending (created in %.1f s)%n", nodes,
                    GPUS, nodes * BOUND_PER_NODE, asked.size(), (System.nanoTime() - t0) / 1e9);
            int port = LocalControlPlane.freePort();
            int management = LocalControlPlane.freePort();
            try (ChildProcess extender = ChildProcess.quarkusApp("scheduler-extender",
                    Map.of("KUBECONFIG", api.writeKubeconfig(work.resolve("kubeconfig")).toString(),
                            "QUARKUS_HTTP_PORT", Integer.toString(port), "QUARKUS_MANAGEMENT_PORT",
                            Integer.toString(management), "QUARKUS_LOG_LEVEL", "WARN"),
                    work.resolve("extender.log"))) {
                HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                String base = "http://127.0.0.1:" + port;
                awaitReady(http, "http://127.0.0.1:" + management, extender);
                String nodeNames = IntStream.range(0, nodes).mapToObj(i -> "\"node-" + i + "\"")
                        .collect(Collectors.joining(",", "[", "]"));
                LatencyBar.Latencies pairs = new LatencyBar.Latencies(rounds);
                LatencyBar.Latencies reference = new LatencyBar.Latencies(rounds);
                for (int i = 0; i < warmup + rounds; i++) {
                    String body = args(client, asked.get(i), nodeNames);
                    long start = System.nanoTime();
                    String unreserved = post(http, base + "/prioritize", body) + post(http, base + "/prioritize", body);
                    long middle = System.nanoTime();
                    String filter = post(http, base + "/filter", body);
                    String prioritize = post(http, base + "/prioritize", body);
                    long end = System.nanoTime();
                    if (!unreserved.equals("[][]") || !filter.contains("\"NodeNames\":[\"node-")
                            || !prioritize.contains("\"Score\":10")) {
                        throw new IllegalStateException("unexpected answer: " + unreserved + " / " + filter + " / " + prioritize);
                    }
                    if (i >= warmup) {
                        reference.add(middle - start);
                        pairs.add(end - middle);
                    }
                }
                double p50 = pairs.percentileMs(0.5);
                double p99 = pairs.percentileMs(0.99);
                double refP99 = reference.percentileMs(0.99);
                System.out.printf(Locale.ROOT, "filter + prioritize, %d rounds after %d warm-up: p50 %.3f ms, p99 %.3f ms, "
                        + "max %.3f ms%n", rounds, warmup, p50, p99, pairs.maxMs());
                System.out.printf(Locale.ROOT, "reference, prioritize twice before the filter (same body, same process, same "
                        + "connection, no placement): p50 %.3f ms, p99 %.3f ms, max %.3f ms%n", reference.percentileMs(0.5),
                        refP99, reference.maxMs());
                // A smoke run is too short to judge a timing on a busy machine; it judges that every round ran.
                var failure = judge ? BAR.verdict("filter + prioritize", p99, refP99) : java.util.Optional.<String>empty();
                failure.ifPresent(System.out::println);
                System.out.printf(Locale.ROOT, "BENCH extender nodes=%d p50_ms=%.3f p99_ms=%.3f ref_p99_ms=%.3f p99_bar_ms=%.0f "
                        + "rounds=%d%n", nodes, p50, p99, refP99, BAR.p99Ms(), rounds);
                return failure.isPresent() ? 1 : 0;
            }
        }
    }

    static void populate(RealApiServer api, int nodes) throws Exception {
        KubernetesClient client = api.client();
        api.createNamespace("fns", Map.of());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<?>> work = new ArrayList<>();
        for (int n = 0; n < nodes; n++) {
            String name = "node-" + n;
            List<GpuDevice> gpus = IntStream.range(0, GPUS)
                    .mapToObj(g -> new GpuDevice("GPU-" + name + "-" + g, g, "A100-40GB", 40_960, 108)).toList();
            work.add(pool.submit(() -> client.nodes().resource(new NodeBuilder().withNewMetadata().withName(name)
                    .withAnnotations(Map.of(DiluNames.GPU_INVENTORY, InventoryAnnotation.write(gpus))).endMetadata().build())
                    .create()));
        }
        for (Future<?> f : work) {
            f.get();
        }
        work.clear();
        Random rnd = new Random(11);
        for (int p = 0; p < nodes * BOUND_PER_NODE; p++) {
            int node = rnd.nextInt(nodes);
            String gpu = "GPU-node-" + node + "-" + rnd.nextInt(GPUS);
            Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity("20"), DiluNames.GPU_MEMORY, new Quantity("4096"));
            var pod = new PodBuilder().withNewMetadata().withName("bound-" + p).withNamespace("fns")
                    .withAnnotations(Map.of(DiluNames.ASSIGNED_GPUS, gpu, DiluNames.FUNCTION, "f" + (p % 50))).endMetadata()
                    .withNewSpec().withNodeName("node-" + node).withAutomountServiceAccountToken(false)
                    .addNewContainer().withName("c").withImage("x").withNewResources().withLimits(share).endResources().endContainer()
                    .endSpec().build();
            work.add(pool.submit(() -> client.pods().inNamespace("fns").resource(pod).create()));
        }
        for (Future<?> f : work) {
            f.get();
        }
        pool.shutdown();
    }

    /** The pods the bench asks about, pending on the API server: {SM percent, memory MiB} each. */
    static List<Pod> createPending(KubernetesClient client, List<int[]> shares) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<Pod>> created = new ArrayList<>();
        for (int i = 0; i < shares.size(); i++) {
            int sm = shares.get(i)[0];
            Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                    DiluNames.GPU_MEMORY, new Quantity(Integer.toString(shares.get(i)[1])));
            Pod pod = new PodBuilder().withNewMetadata().withName("bench-" + i).withNamespace("fns")
                    .withAnnotations(Map.of(DiluNames.FUNCTION, "f" + sm % 50)).endMetadata().withNewSpec()
                    .withSchedulerName(DiluNames.SCHEDULER_NAME).withAutomountServiceAccountToken(false).addNewContainer()
                    .withName("c").withImage("x").withNewResources().withLimits(share).endResources().endContainer()
                    .endSpec().build();
            created.add(pool.submit(() -> client.pods().inNamespace("fns").resource(pod).create()));
        }
        List<Pod> pods = new ArrayList<>();
        for (Future<Pod> f : created) {
            pods.add(f.get());
        }
        pool.shutdown();
        return pods;
    }

    /** ExtenderArgs as kube-scheduler sends them: the whole pod, the candidate node names. */
    static String args(KubernetesClient client, Pod pod, String nodeNames) {
        return "{\"Pod\":" + client.getKubernetesSerialization().asJson(pod) + ",\"NodeNames\":" + nodeNames + "}";
    }

    static String post(HttpClient http, String url, String body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException(url + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    static void awaitReady(HttpClient http, String management, ChildProcess extender) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (System.nanoTime() < deadline) {
            if (!extender.alive()) {
                throw new IllegalStateException("the extender exited: " + extender.output());
            }
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(management + "/q/health/ready")).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (java.io.IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the extender was not ready within 120 s: " + extender.output());
    }
}
