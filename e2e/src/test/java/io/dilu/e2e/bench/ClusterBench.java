package io.dilu.e2e.bench;

import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./dilu bench cluster}: the local cluster as a user meets it. The time from {@code ./dilu cluster up}
 * (images and binaries already built) to every system pod Ready, then create → Running for 20 GPU pods of an
 * image already imported, each seen by polling the API server every 50 ms. Takes the cluster down at the end.
 *
 * <p>Usage: {@code ClusterBench REPO_ROOT [PODS]}.
 */
public final class ClusterBench {

    private ClusterBench() {}

    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]);
        int pods = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        Path cluster = root.resolve("cluster/bin/dilu-cluster");
        Path dir = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
        run(cluster.toString(), "down");
        long upStart = System.nanoTime();
        run(cluster.toString(), "up", "--nodes", "2");
        double startup = (System.nanoTime() - upStart) / 1e9;
        try (KubernetesClient client = new KubernetesClientBuilder()
                .withConfig(Config.fromKubeconfig(Files.readString(dir.resolve("admin.kubeconfig")))).build()) {
            client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName("bench")
                    .addToLabels("dilu.io/webhook", "enabled").endMetadata().build()).serverSideApply();
            Map<String, Long> created = new HashMap<>();
            for (int i = 0; i < pods; i++) {
                String name = "p" + i;
                created.put(name, System.nanoTime());
                client.pods().inNamespace("bench").resource(new PodBuilder().withNewMetadata().withName(name).endMetadata()
                        .withNewSpec().withTerminationGracePeriodSeconds(1L).addNewContainer().withName("c")
                        .withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never")
                        .withCommand("/bin/sleep", "3600").withNewResources()
                        .addToLimits("dilu.io/gpu-sm", new Quantity("10"))
                        .addToLimits("dilu.io/gpu-memory", new Quantity("1024"))
                        .endResources().endContainer().endSpec().build()).create();
            }
            Map<String, Double> running = new HashMap<>();
            long deadline = System.nanoTime() + 300_000_000_000L;
            while (running.size() < pods && System.nanoTime() < deadline) {
                for (Pod p : client.pods().inNamespace("bench").list().getItems()) {
                    String name = p.getMetadata().getName();
                    if (!running.containsKey(name) && "Running".equals(p.getStatus().getPhase())) {
                        running.put(name, (System.nanoTime() - created.get(name)) / 1e9);
                    }
                }
                Thread.sleep(50);
            }
            double[] seconds = running.values().stream().mapToDouble(Double::doubleValue).sorted().toArray();
            List<Double> all = Arrays.stream(seconds).boxed().toList();
            double p50 = seconds.length == 0 ? Double.NaN : seconds[seconds.length / 2];
            double p95 = seconds.length == 0 ? Double.NaN : seconds[Math.min(seconds.length - 1, (int) Math.ceil(seconds.length * 0.95) - 1)];
            System.out.printf(Locale.ROOT, "cluster up (2 nodes, 8 emulated GPUs, Dilu installed and Ready): %.1f s; "
                    + "%d of %d GPU pods Running, create -> Running s: %s%n", startup, running.size(), pods, all);
            System.out.printf(Locale.ROOT, "BENCH cluster nodes=2 gpus=8 pods=%d startup_s=%.1f pod_start_p50_s=%.2f "
                    + "pod_start_p95_s=%.2f%n", running.size(), startup, p50, p95);
        } finally {
            run(cluster.toString(), "down");
        }
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed");
        }
    }
}
