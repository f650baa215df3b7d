package io.dilu.e2e.bench;

import io.dilu.testing.KubeClients;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./dilu bench cluster}: the local cluster as a user meets it. The time from {@code ./dilu cluster up}
 * (images and binaries already built) to every system pod Ready; then create → Running for GPU pods of an image
 * already imported, seen through a watch, in two ways:
 * <ul>
 *   <li>paced: one pod a second, the way Kubernetes' pod-startup SLO is measured (pods created at a rate the
 *       nodes sustain, so the figure is the latency a pod sees, not a queue);</li>
 *   <li>burst: as many pods again created at once, which on a small machine measures how fast the nodes work
 *       through a queue (every pod costs the kubelet, containerd, runc and the CNI plugins CPU time).</li>
 * </ul>
 * Takes the cluster down at the end.
 *
 * <p>Usage: {@code ClusterBench REPO_ROOT [PODS | --smoke]} (20 pods each way; smoke: 5, for CI).
 */
public final class ClusterBench {

    private static final String NS = "bench";
    private static final long PACE_NANOS = 1_000_000_000L;

    private ClusterBench() {}

    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]);
        int pods = args.length < 2 ? 20 : args[1].equals("--smoke") ? 5 : Integer.parseInt(args[1]);
        Path cluster = root.resolve("cluster/bin/dilu-cluster");
        Path dir = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
        run(cluster.toString(), "down");
        long upStart = System.nanoTime();
        run(cluster.toString(), "up", "--nodes", "2");
        double startup = (System.nanoTime() - upStart) / 1e9;
        try (KubernetesClient client = KubeClients.fromKubeconfig(dir.resolve("admin.kubeconfig"))) {
            client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NS)
                    .addToLabels("dilu.io/webhook", "enabled").endMetadata().build()).serverSideApply();
            double[] paced = startPods(client, "paced", pods, PACE_NANOS);
            double[] burst = startPods(client, "burst", pods, 0);
            System.out.printf(Locale.ROOT, "cluster up (2 nodes, 8 emulated GPUs, Dilu installed and Ready): %.1f s%n", startup);
            System.out.printf(Locale.ROOT, "paced, one pod a second, create -> Running s: %s%n", List.of(box(paced)));
            System.out.printf(Locale.ROOT, "burst, %d pods at once, create -> Running s: %s%n", pods, List.of(box(burst)));
            // The version the API server reports, as a user's kubectl version shows it.
            String kubernetes = client.getKubernetesVersion().getGitVersion();
            System.out.printf(Locale.ROOT, "BENCH cluster nodes=2 gpus=8 pods=%d startup_s=%.1f pod_start_p50_s=%.2f "
                    + "pod_start_p95_s=%.2f burst_pods=%d burst_p50_s=%.2f burst_p95_s=%.2f kubernetes_version=%s%n",
                    paced.length, startup, percentile(paced, 0.50), percentile(paced, 0.95), burst.length,
                    percentile(burst, 0.50), percentile(burst, 0.95), kubernetes.replaceFirst("^v", ""));
        } finally {
            run(cluster.toString(), "down");
        }
    }

    /**
     * Creates {@code count} GPU pods, one every {@code paceNanos}, and returns their create → Running seconds, sorted.
     * Running is seen through a watch: polling a list every few milliseconds would load the API server it measures.
     */
    private static double[] startPods(KubernetesClient client, String prefix, int count, long paceNanos)
            throws InterruptedException {
        Map<String, Long> created = new ConcurrentHashMap<>();
        Map<String, Double> scheduled = new ConcurrentHashMap<>();
        Map<String, Double> running = new ConcurrentHashMap<>();
        CountDownLatch all = new CountDownLatch(count);
        Watcher<Pod> watcher = new Watcher<>() {
            @Override
            public void eventReceived(Action action, Pod p) {
                long now = System.nanoTime();
                Long at = created.get(p.getMetadata().getName());
                if (at != null && p.getSpec().getNodeName() != null) {
                    scheduled.putIfAbsent(p.getMetadata().getName(), (now - at) / 1e9);
                }
                if (at != null && "Running".equals(p.getStatus().getPhase())
                        && running.putIfAbsent(p.getMetadata().getName(), (now - at) / 1e9) == null) {
                    all.countDown();
                }
            }

            @Override
            public void onClose(WatcherException cause) {}
        };
        try (Watch watch = client.pods().inNamespace(NS).watch(watcher)) {
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                long wait = start + i * paceNanos - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                String name = prefix + i;
                created.put(name, System.nanoTime());
                client.pods().inNamespace(NS).resource(gpuPod(name)).create();
            }
            all.await(300, TimeUnit.SECONDS);
        }
        // Where the time went, in creation order: create -> bound to a node, bound -> Running.
        StringBuilder phases = new StringBuilder(prefix + ", bound s / Running s after create:");
        for (int i = 0; i < count; i++) {
            String name = prefix + i;
            phases.append(String.format(Locale.ROOT, " %s=%.2f/%.2f", name, scheduled.getOrDefault(name, Double.NaN),
                    running.getOrDefault(name, Double.NaN)));
        }
        System.out.println(phases);
        return running.values().stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }

    private static Pod gpuPod(String name) {
        return new PodBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L).addNewContainer().withName("c")
                .withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never")
                .withCommand("/bin/sleep", "3600").withNewResources()
                .addToLimits("dilu.io/gpu-sm", new Quantity("10"))
                .addToLimits("dilu.io/gpu-memory", new Quantity("1024"))
                .endResources().endContainer().endSpec().build();
    }

    private static double percentile(double[] sorted, double q) {
        return sorted.length == 0 ? Double.NaN : sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * q) - 1)];
    }

    private static Double[] box(double[] values) {
        return Arrays.stream(values).map(v -> Math.round(v * 100) / 100.0).boxed().toArray(Double[]::new);
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed");
        }
    }
}
