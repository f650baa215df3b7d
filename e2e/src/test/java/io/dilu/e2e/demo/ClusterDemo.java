package io.dilu.e2e.demo;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.testing.MetricsPage;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./dilu demo} on the local cluster ({@code ./dilu cluster up}): Dilu installed by its manifests, two
 * inference functions (one of them bursty) and a two-worker training job deployed as a user would, a minute of
 * load sent to the inference servers, and what happens on every GPU shown live from the node agents' metrics
 * and the load's own latencies; then a summary. All GPUs are emulated: the figures are emulated figures.
 *
 * <p>Usage: {@code ClusterDemo [--seconds N]} (N in 10..3600, default 60).
 */
public final class ClusterDemo {

    static final String NS = "demo";
    static final Path DIR = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
    /** An emulated A100's tokens per second: 108 SMs × (5 ms / 100 µs blocks) per 5 ms period. */
    static final double GPU_BLOCKS_PER_SECOND = 5_400 / 0.005;
    static final int SERVE_PORT = 8080;
    static final double SLO_MS = 100;

    /** An inference function: replicas of the emulated server, and the load it gets. */
    record Inference(String name, int replicas, int sm, int memoryMib, String model, double baseRps, double burstRps) {}

    public static void main(String[] args) throws Exception {
        int seconds = 60;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--seconds") && i + 1 < args.length) {
                seconds = parseSeconds(args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i] + " (--seconds N)");
            }
        }
        List<Inference> functions = List.of(
                new Inference("resnet50", 2, 30, 4096, "--batch 8 --max-wait-ms 5 --kernels 20 --blocks 216 --block-us 100",
                        30, 150),
                new Inference("bert-base", 2, 20, 3072, "--batch 4 --max-wait-ms 5 --kernels 12 --blocks 108 --block-us 100",
                        40, 40));
        try (KubernetesClient client = new KubernetesClientBuilder()
                .withConfig(Config.fromKubeconfig(Files.readString(DIR.resolve("admin.kubeconfig")))).build()) {
            deploy(client, functions);
            List<Pod> pods = awaitRunning(client, functions.stream().mapToInt(Inference::replicas).sum() + 1);
            printPlacement(pods);
            Map<String, List<String>> endpoints = endpoints(pods, functions);
            awaitServing(endpoints);
            run(functions, endpoints, seconds);
        }
    }

    static int parseSeconds(String text) {
        try {
            int s = Integer.parseInt(text);
            if (s >= 10 && s <= 3600) {
                return s;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("--seconds=" + text + " is not allowed: must be an integer in 10..3600");
    }

    // ---- deploying, as a user would: a namespace that has the webhook, Deployments and a training pod ----

    static void deploy(KubernetesClient client, List<Inference> functions) {
        System.out.println("demo: deploying into namespace " + NS + ": " + functions.stream()
                .map(f -> f.name() + " ×" + f.replicas()).toList() + " (inference, emu-serve) beside gpt2-train (training, 2 workers, placed first)");
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NS)
                .addToLabels(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_ENABLED).addToLabels("dilu.io/allow-slo", "true")
                .endMetadata().build()).serverSideApply();
        // The training job first, as on a cluster where it runs already when the functions scale out: their
        // instances then sit beside its workers (workload affinity, §3.3).
        String train = "exec emu-train --seconds 86400 --kernels 8 --blocks 432 --block-us 100 --gap-ms 1";
        client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName("gpt2-train")
                .addToLabels("app", "gpt2-train").endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L)
                .withContainers(gpuContainer("worker-0", 40, 8192, train), gpuContainer("worker-1", 40, 8192, train))
                .endSpec().build()).serverSideApply();
        client.pods().inNamespace(NS).withName("gpt2-train")
                .waitUntilCondition(p -> p != null && p.getSpec().getNodeName() != null, 2, TimeUnit.MINUTES);
        for (Inference f : functions) {
            Container server = gpuContainer("server", f.sm(), f.memoryMib(),
                    "exec emu-serve --port " + SERVE_PORT + " " + f.model());
            client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder()
                    .withNewMetadata().withName(f.name()).endMetadata()
                    .withNewSpec().withReplicas(f.replicas()).withNewSelector().addToMatchLabels("app", f.name()).endSelector()
                    .withNewTemplate().withNewMetadata().addToLabels("app", f.name())
                    // what Knative puts on a revision's pods: the webhook treats them as serving (SLO) instances
                    .addToLabels("serving.knative.dev/service", f.name()).endMetadata()
                    .withNewSpec().withTerminationGracePeriodSeconds(1L).withContainers(server).endSpec()
                    .endTemplate().endSpec().build()).serverSideApply();
        }
    }

    static Container gpuContainer(String name, int sm, int memoryMib, String script) {
        return new ContainerBuilder().withName(name).withImage("dilu.local/workload:0.1.0").withImagePullPolicy("Never")
                .withCommand("/bin/sh", "-c", script).withNewResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)))
                .addToLimits(DiluNames.GPU_MEMORY, new Quantity(Integer.toString(memoryMib)))
                .endResources().build();
    }

    static List<Pod> awaitRunning(KubernetesClient client, int expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        long lastPrint = 0;
        while (true) {
            List<Pod> pods = client.pods().inNamespace(NS).list().getItems().stream()
                    .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
            long running = pods.stream().filter(p -> "Running".equals(p.getStatus().getPhase())).count();
            if (running >= expected && pods.size() == expected) {
                System.out.printf("demo: %d pods Running%n", running);
                return pods;
            }
            if (System.nanoTime() > deadline) {
                pods.forEach(p -> System.out.println("  " + p.getMetadata().getName() + ": " + p.getStatus().getPhase()
                        + " " + p.getStatus().getConditions().stream().map(c -> c.getType() + "=" + c.getStatus()
                        + (c.getMessage() == null ? "" : " (" + c.getMessage() + ")")).toList()));
                throw new IllegalStateException("the demo's pods did not reach Running in 3 minutes (above)");
            }
            if (System.nanoTime() - lastPrint > 5_000_000_000L) {
                System.out.printf("demo: %d of %d pods Running...%n", running, expected);
                lastPrint = System.nanoTime();
            }
            Thread.sleep(500);
        }
    }

    static void printPlacement(List<Pod> pods) {
        Map<String, List<String>> byGpu = new TreeMap<>();
        for (Pod p : pods) {
            String assigned = p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS);
            if (assigned == null) {
                continue;
            }
            AssignedGpus gpus = AssignedGpus.parse(assigned);
            for (int i = 0; i < p.getSpec().getContainers().size(); i++) {
                Container c = p.getSpec().getContainers().get(i);
                byGpu.computeIfAbsent(p.getSpec().getNodeName() + " " + gpus.forContainer(i).orElse("?"), g -> new ArrayList<>())
                        .add(p.getMetadata().getName() + "/" + c.getName() + " " + c.getResources().getLimits().get(DiluNames.GPU_SM)
                                + "%–" + p.getMetadata().getAnnotations().get(DiluNames.SM_LIMIT) + "% "
                                + p.getMetadata().getAnnotations().getOrDefault(DiluNames.PRIORITY, ""));
            }
        }
        System.out.println();
        System.out.println("Placement by the dilu-scheduler (node, emulated GPU: instances with SM request–limit, priority):");
        byGpu.forEach((gpu, list) -> System.out.println("  " + gpu + ": " + String.join(", ", list)));
        System.out.printf("%d instances on %d GPUs; a GPU per instance would take %d.%n",
                byGpu.values().stream().mapToInt(List::size).sum(), byGpu.size(), byGpu.values().stream().mapToInt(List::size).sum());
    }

    static Map<String, List<String>> endpoints(List<Pod> pods, List<Inference> functions) {
        Map<String, List<String>> out = new HashMap<>();
        for (Inference f : functions) {
            out.put(f.name(), pods.stream().filter(p -> f.name().equals(p.getMetadata().getLabels().get("app")))
                    .map(p -> "http://" + p.getStatus().getPodIP() + ":" + SERVE_PORT).toList());
        }
        return out;
    }

    static void awaitServing(Map<String, List<String>> endpoints) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        for (String base : endpoints.values().stream().flatMap(List::stream).toList()) {
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (true) {
                try {
                    if (http.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).timeout(Duration.ofSeconds(2)).build(),
                            HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                        break;
                    }
                } catch (IOException e) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(base + " does not answer: " + e.getMessage(), e);
                    }
                }
                Thread.sleep(500);
            }
        }
    }

    // ---- the load, and the live view ----

    /** Latencies of the requests answered in the current view interval, and the whole run, per function. */
    static final class Latencies {
        final ConcurrentLinkedQueue<Double> interval = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<Double> all = new ConcurrentLinkedQueue<>();
        final AtomicLong sent = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicInteger inFlight = new AtomicInteger();

        double[] drainInterval() {
            List<Double> out = new ArrayList<>();
            for (Double d; (d = interval.poll()) != null; ) {
                out.add(d);
            }
            return out.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        }
    }

    static void run(List<Inference> functions, Map<String, List<String>> endpoints, int seconds) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
                .executor(Executors.newFixedThreadPool(4)).build();
        Map<String, Latencies> latencies = new TreeMap<>();
        functions.forEach(f -> latencies.put(f.name(), new Latencies()));
        ScheduledExecutorService load = Executors.newScheduledThreadPool(functions.size());
        long start = System.nanoTime();
        Random random = new Random(42);
        for (Inference f : functions) {
            Latencies l = latencies.get(f.name());
            List<String> targets = endpoints.get(f.name());
            AtomicLong next = new AtomicLong();
            // Poisson arrivals at the function's rate: its base rate, or the burst rate for 5 s of every 20 s.
            load.scheduleAtFixedRate(() -> {
                double t = (System.nanoTime() - start) / 1e9;
                double rate = (t % 20) >= 10 && (t % 20) < 15 ? f.burstRps() : f.baseRps();
                int n = poisson(random, rate * 0.01);
                for (int i = 0; i < n; i++) {
                    if (l.inFlight.get() >= 512) {
                        l.failed.incrementAndGet(); // the client's own bound: counted as a failed request
                        continue;
                    }
                    String target = targets.get((int) (next.getAndIncrement() % targets.size()));
                    long sentAt = System.nanoTime();
                    l.sent.incrementAndGet();
                    l.inFlight.incrementAndGet();
                    http.sendAsync(HttpRequest.newBuilder(URI.create(target + "/infer")).timeout(Duration.ofSeconds(10))
                                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding())
                            .whenComplete((r, e) -> {
                                l.inFlight.decrementAndGet();
                                if (e != null || r.statusCode() != 200) {
                                    l.failed.incrementAndGet();
                                } else {
                                    double ms = (System.nanoTime() - sentAt) / 1e6;
                                    l.interval.add(ms);
                                    l.all.add(ms);
                                }
                            });
                }
            }, 0, 10, TimeUnit.MILLISECONDS);
        }
        System.out.printf("%ndemo: %d s of load: resnet50 %.0f rps with bursts to %.0f rps (5 s of every 20 s), bert-base"
                + " %.0f rps steady; the view refreshes every 5 s (EMULATED GPUs)%n", seconds, functions.get(0).baseRps(),
                functions.get(0).burstRps(), functions.get(1).baseRps());
        Map<String, Double> previous = scrape();
        long previousAt = System.nanoTime();
        Map<String, double[]> blockShares = new TreeMap<>();
        while (System.nanoTime() - start < seconds * 1_000_000_000L) {
            Thread.sleep(5_000);
            Map<String, Double> now = scrape();
            long nowAt = System.nanoTime();
            view((nowAt - start) / 1e9, previous, now, (nowAt - previousAt) / 1e9, latencies, blockShares);
            previous = now;
            previousAt = nowAt;
        }
        load.shutdownNow();
        summary(latencies, blockShares);
        http.executor().ifPresent(e -> ((java.util.concurrent.ExecutorService) e).shutdownNow());
    }

    static int poisson(Random random, double mean) {
        int n = 0;
        double p = Math.exp(-mean);
        double s = p;
        double u = random.nextDouble();
        while (u > s) {
            n++;
            p *= mean / n;
            s += p;
        }
        return n;
    }

    private static final Pattern SAMPLE = Pattern.compile("^(dilu_[a-z_]+)\\{([^}]*)} ([0-9.eE+-]+)$", Pattern.MULTILINE);
    private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"([^\"]*)\"");

    /** Every node agent's per-container and per-GPU series, keyed "metric|node|gpu|namespace/pod/container". */
    static Map<String, Double> scrape() throws IOException, InterruptedException {
        int nodes = Integer.parseInt(Files.readString(DIR.resolve("nodes")).trim());
        Map<String, Double> out = new HashMap<>();
        for (int i = 1; i <= nodes; i++) {
            String body;
            try {
                body = MetricsPage.read(URI.create("http://127.0.0." + i + ":8081/q/metrics"), Duration.ofSeconds(5));
            } catch (IOException e) {
                continue; // a node agent restarting: its rows are missing from this view
            }
            Matcher m = SAMPLE.matcher(body);
            while (m.find()) {
                Map<String, String> labels = new HashMap<>();
                Matcher l = LABEL.matcher(m.group(2));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
                if (!labels.containsKey("gpu")) {
                    continue;
                }
                String owner = labels.containsKey("pod")
                        ? labels.get("namespace") + "/" + labels.get("pod") + "/" + labels.get("container") : "";
                out.put(m.group(1) + "|127.0.0." + i + "|" + labels.get("gpu") + "|" + owner, Double.parseDouble(m.group(3)));
            }
        }
        return out;
    }

    static void view(double t, Map<String, Double> before, Map<String, Double> now, double dt,
            Map<String, Latencies> latencies, Map<String, double[]> blockShares) {
        Map<String, double[]> p95 = new HashMap<>();
        latencies.forEach((f, l) -> p95.put(f, l.drainInterval()));
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "%n--- t=%.0f s (emulated GPUs) ---%n", t));
        out.append(String.format(Locale.ROOT, "  %-34s %-30s %8s %9s %8s %8s%n", "node / GPU", "instance", "grant %",
                "blocks %", "KLC ms", "p95 ms"));
        Map<String, List<String>> byGpu = new TreeMap<>();
        for (var e : now.entrySet()) {
            String[] k = e.getKey().split("\\|", -1);
            if (!k[0].equals("dilu_container_tokens_granted_total") || !k[3].startsWith(NS + "/")) {
                continue;
            }
            String suffix = "|" + k[1] + "|" + k[2] + "|" + k[3];
            double grant = rate(before, now, "dilu_container_tokens_granted_total" + suffix, dt) / GPU_BLOCKS_PER_SECOND * 100;
            double blocks = rate(before, now, "dilu_container_blocks_launched_total" + suffix, dt) / GPU_BLOCKS_PER_SECOND * 100;
            double klc = now.getOrDefault("dilu_container_klc_seconds" + suffix, 0.0) * 1000;
            String pod = k[3].split("/")[1];
            String function = latencies.keySet().stream().filter(pod::startsWith).findFirst().orElse("");
            double[] lat = p95.getOrDefault(function, new double[0]);
            double[] share = blockShares.computeIfAbsent(function.isEmpty() ? "gpt2-train" : function, x -> new double[2]);
            share[0] += blocks;
            share[1]++;
            String gpu = k[1] + " " + k[2].substring(Math.max(0, k[2].length() - 22));
            byGpu.computeIfAbsent(gpu, g -> new ArrayList<>()).add(String.format(Locale.ROOT, "%-30s %8.1f %9.1f %8.2f %8s",
                    pod.length() > 22 ? pod.substring(0, 22) + "/" + k[3].split("/")[2] : pod + "/" + k[3].split("/")[2],
                    grant, blocks, klc, lat.length == 0 ? "-" : String.format(Locale.ROOT, "%.1f", percentile(lat, 0.95))));
        }
        byGpu.forEach((gpu, rows) -> {
            for (int i = 0; i < rows.size(); i++) {
                out.append(String.format(Locale.ROOT, "  %-34s %s%n", i == 0 ? gpu : "", rows.get(i)));
            }
        });
        latencies.forEach((f, l) -> out.append(String.format(Locale.ROOT, "  %s: %d answered in the last %.0f s, %d failed so far%n",
                f, p95.get(f).length, dt, l.failed.get())));
        System.out.print(out);
    }

    static double rate(Map<String, Double> before, Map<String, Double> now, String key, double dt) {
        Double a = before.get(key);
        Double b = now.get(key);
        return a == null || b == null ? 0 : Math.max(0, b - a) / dt;
    }

    static double percentile(double[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * q) - 1)];
    }

    static void summary(Map<String, Latencies> latencies, Map<String, double[]> blockShares) {
        System.out.println();
        System.out.println("Summary (emulated GPUs; latencies measured by the load generator, end to end over HTTP):");
        latencies.forEach((f, l) -> {
            double[] all = l.all.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            long over = Arrays.stream(all).filter(ms -> ms > SLO_MS).count();
            System.out.printf(Locale.ROOT, "  %-10s %6d requests, %d failed; p50 %.1f ms, p95 %.1f ms, p99 %.1f ms;"
                            + " %.2f%% over %.0f ms%n", f, l.sent.get(), l.failed.get(),
                    all.length == 0 ? Double.NaN : percentile(all, 0.50), all.length == 0 ? Double.NaN : percentile(all, 0.95),
                    all.length == 0 ? Double.NaN : percentile(all, 0.99), all.length == 0 ? 0 : 100.0 * over / all.length, SLO_MS);
        });
        double[] train = blockShares.getOrDefault("gpt2-train", new double[2]);
        if (train[1] > 0) {
            System.out.printf(Locale.ROOT, "  gpt2-train: each worker ran on average at %.1f%% of a GPU's thread-block"
                    + " capacity (its request: 40%%; it takes what the inference beside it leaves)%n", train[0] / train[1]);
        }
    }
}
