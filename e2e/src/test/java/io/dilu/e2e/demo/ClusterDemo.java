package io.dilu.e2e.demo;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.testing.KubeClients;
import io.dilu.trials.HostLateness;
import io.dilu.e2e.cluster.PodLives;
import io.dilu.e2e.cluster.ServingFunction;
import io.dilu.kube.PodShares;
import io.dilu.loadgen.LoadGenerator;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.Progress;
import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.ClusterShape;
import io.dilu.simulator.coscaling.CoScalingSimulation;
import io.dilu.testing.MetricsPage;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleUnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./dilu demo} on the local cluster ({@code ./dilu cluster up}): Dilu installed by its manifests, two
 * inference functions and a two-worker training job deployed as a user would — one function scaled by Dilu's
 * autoscaler through a PodAutoscaler of its class — two minutes of load sent to the inference servers, and what
 * happens on every GPU and to the scaled function shown live from the node agents' metrics, the API server and
 * the load's own latencies; then a summary. All GPUs are emulated: the figures are emulated figures.
 *
 * <p>Usage: {@code ClusterDemo [--seconds N]} (N in 10..3600, default {@value #STORY_SECONDS}, the length of the load's
 * story, which repeats).
 */
public final class ClusterDemo {

    static final String NS = "demo";
    static final Path DIR = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));
    /** An emulated A100's tokens per second: 108 SMs × (5 ms / 100 µs blocks) per 5 ms period. */
    static final double GPU_BLOCKS_PER_SECOND = 5_400 / 0.005;
    /** One story of the scaled function's load, repeated: see {@link #scaledRate}. */
    static final int STORY_SECONDS = 150;
    /** The third burst, which finds the instance the second one added parked: {@link #scaledRate}. */
    static final int THIRD_BURST = 115;

    /**
     * An inference function: its emulated model, its SLO, its replicas (the initial ones when Dilu's autoscaler
     * scales it, with the rates one instance serves at its SM request and limit), and the load it gets.
     */
    record Inference(String name, int replicas, int sm, int memoryMib, double sloMs, String model, boolean scaled,
            double rpsAtRequest, double rpsAtLimit, DoubleUnaryOperator rps) {}

    /**
     * The scaled function's load at {@code t} seconds: 24 rps (below what one instance serves at its request),
     * a burst to 64 rps at 20–30 s (beyond its request, within its limit: vertical scaling's), a burst to 160 rps
     * at 45–60 s (twice what one instance serves at its limit: the autoscaler's), then 24 rps again, long enough for
     * the instance it added to be parked, and the same burst at 115–125 s, which wakes it.
     */
    static double scaledRate(double t) {
        double s = t % STORY_SECONDS;
        return s >= 20 && s < 30 ? 64 : (s >= 45 && s < 60) || (s >= THIRD_BURST && s < THIRD_BURST + 10) ? 160 : 24;
    }

    public static void main(String[] args) throws Exception {
        int seconds = STORY_SECONDS;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--seconds") && i + 1 < args.length) {
                seconds = parseSeconds(args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i] + " (--seconds N)");
            }
        }
        List<Inference> functions = List.of(
                // 40 rps at its 20% SM request (a batch of 2: ten kernels of 1,080 blocks of 100 µs, 50 ms at 20%), 80
                // at its 40% limit, as in ./dilu bench coscaling-cluster
                new Inference("bert-large", 1, 20, 2048, 200, "--batch 2 --max-wait-ms 5 --kernels 10 --blocks 1080 --block-us 100",
                        true, 40, 80, ClusterDemo::scaledRate),
                new Inference("bert-base", 2, 20, 3072, 100, "--batch 4 --max-wait-ms 5 --kernels 12 --blocks 108 --block-us 100",
                        false, 0, 0, t -> 40));
        try (KubernetesClient client = KubeClients.fromKubeconfig(DIR.resolve("admin.kubeconfig"))) {
            deploy(client, functions);
            List<Pod> pods = awaitRunning(client, functions.stream().mapToInt(Inference::replicas).sum() + 1);
            printPlacement(pods);
            awaitServing(client, functions);
            run(client, functions, seconds);
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
                .map(f -> f.name() + (f.scaled() ? " (scaled by Dilu's autoscaler, from 1)" : " ×" + f.replicas())).toList()
                + " (inference, emu-serve) beside gpt2-train (training, 2 workers, placed first)");
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
            ServingFunction.deploy(client, NS, f.name(), f.replicas(), f.sm(), f.memoryMib(),
                    f.scaled() ? ServingFunction.DILU_SCALED : Map.of(), f.model());
            if (f.scaled()) {
                ServingFunction.autoscale(client, NS, f.name(), f.rpsAtRequest(), f.rpsAtLimit());
            }
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

    /** The function's pods that are not going, as the API server has them. */
    static List<Pod> pods(KubernetesClient client, String function) {
        return client.pods().inNamespace(NS).withLabel("app", function).list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    /**
     * Where each pod was placed (its first GPU) and its SM limit, read as the scheduler extender reads them
     * ({@link PodShares}, {@link PodQuotaAnnotations#smLimit}), for the pods it has placed.
     */
    static List<BurstBooks.Placed> placed(List<Pod> pods) {
        List<BurstBooks.Placed> out = new ArrayList<>();
        for (Pod p : pods) {
            PodShares.of(p).ifPresent(share -> share.assigned().flatMap(a -> a.forContainer(0)).ifPresent(gpu -> out.add(
                    new BurstBooks.Placed(share.name(), gpu,
                            PodQuotaAnnotations.smLimit(share.annotations(), share.containers().getFirst().smPercent())))));
        }
        out.sort(java.util.Comparator.comparing(BurstBooks.Placed::pod));
        return List.copyOf(out);
    }

    /** Where the function's ready pods serve: where its requests may go. */
    static List<URI> readyTargets(List<Pod> pods) {
        return pods.stream().map(ServingFunction::target).flatMap(Optional::stream).toList();
    }

    static void awaitServing(KubernetesClient client, List<Inference> functions) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        for (Inference f : functions) {
            while (readyTargets(pods(client, f.name())).size() < f.replicas()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(f.name() + " has no " + f.replicas() + " ready pods after 2 minutes");
                }
                Thread.sleep(500);
            }
        }
    }

    // ---- the load, and the live view ----

    /** A function's pods as the API server shows them each second: where its load goes, and the scaling story. */
    static final class Pods {
        /** A second the API server was not read in (a slow answer, a busy machine): not a count of 0. */
        static final int UNKNOWN = -1;
        final AtomicReference<List<URI>> ready = new AtomicReference<>(List.of());
        /**
         * Per second of the run: pods that exist (starting, ready or parked), ready ones, and parked ones (their SM
         * request given back, their model kept in GPU memory); {@link #UNKNOWN} where not read.
         */
        final int[] total;
        final int[] readyCount;
        final int[] parked;
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        /** Where its pods were, in the seconds that changed it (the scaled function's only). */
        final Map<Integer, List<BurstBooks.Placed>> placed = new java.util.concurrent.ConcurrentHashMap<>();
        volatile int last = -1;
        volatile int lastParked = -1;
        /** Requests due by the previous view (the view's thread only). */
        int dueBefore;

        Pods(int seconds) {
            total = new int[seconds];
            readyCount = new int[seconds];
            parked = new int[seconds];
            Arrays.fill(total, UNKNOWN);
            Arrays.fill(readyCount, UNKNOWN);
            Arrays.fill(parked, UNKNOWN);
        }

        /** Pods that are not parked in second {@code t}: starting or serving; {@link #UNKNOWN} where not read. */
        int unparked(int t) {
            return total[t] == UNKNOWN ? UNKNOWN : total[t] - Math.max(0, parked[t]);
        }

        /** Where its pods were as last read at or before second {@code t}; null if never. */
        List<BurstBooks.Placed> placedAt(int t) {
            for (int s = t; s >= 0; s--) {
                List<BurstBooks.Placed> at = placed.get(s);
                if (at != null) {
                    return at;
                }
            }
            return null;
        }

        /** The count last read at or before second {@code t}, or {@link #UNKNOWN}. */
        static int known(int[] perSecond, int t) {
            for (int s = Math.min(t, perSecond.length - 1); s >= 0; s--) {
                if (perSecond[s] != UNKNOWN) {
                    return perSecond[s];
                }
            }
            return UNKNOWN;
        }
    }

    static void run(KubernetesClient client, List<Inference> functions, int seconds) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(2)).build();
        Map<String, Pods> pods = new TreeMap<>();
        Map<String, LoadGenerator> load = new TreeMap<>();
        for (Inference f : functions) {
            Pods p = new Pods(seconds);
            p.ready.set(readyTargets(pods(client, f.name())));
            pods.put(f.name(), p);
            double[] rps = new double[seconds];
            for (int t = 0; t < seconds; t++) {
                rps[t] = f.rps().applyAsDouble(t);
            }
            load.put(f.name(), new LoadGenerator(new RateTrace(f.name(), rps), f.name().hashCode(), p.ready::get, http,
                    ServingFunction.LOAD, System::nanoTime));
        }
        ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor();
        long start = System.nanoTime();
        // Each pod's parking and wakes, timed as the informer delivers them, on the run's clock.
        PodLives lives = new PodLives("app", () -> (System.nanoTime() - start) / 1e9);
        // How late this machine wakes a thread, from the same time zero as the run's seconds.
        try (HostLateness host = HostLateness.start(start);
                var informer = client.pods().inNamespace(NS).inform(lives, 0)) {
            lives.markInitial();
            // Each second: the functions' pods, from the API server (a pod gets requests once it is Ready, as behind
            // Knative's activator), and the scaled function's story.
            poller.scheduleAtFixedRate(() -> {
                int t = (int) ((System.nanoTime() - start) / 1_000_000_000L);
                for (Inference f : functions) {
                    Pods p = pods.get(f.name());
                    try {
                        List<Pod> now = pods(client, f.name());
                        int all = now.size();
                        List<URI> ready = readyTargets(now);
                        int parked = lives.count(f.name()).parked();
                        p.ready.set(ready);
                        if (t < seconds) {
                            p.total[t] = all;
                            p.readyCount[t] = ready.size();
                            p.parked[t] = parked;
                        }
                        if (p.last >= 0 && all != p.last) {
                            p.events.add(String.format(Locale.ROOT, "t=%d s: %s %d → %d pods (%.0f rps offered)", t, f.name(),
                                    p.last, all, f.rps().applyAsDouble(t)));
                        }
                        if (p.lastParked >= 0 && parked != p.lastParked) {
                            p.events.add(String.format(Locale.ROOT, "t=%d s: %s %s: %d of its %d pods parked (%.0f rps offered)",
                                    t, f.name(), parked > p.lastParked ? "parked a pod (its SM request given back, its model"
                                            + " kept in GPU memory)" : "woke a parked pod", parked, all, f.rps().applyAsDouble(t)));
                        }
                        if (f.scaled() && t < seconds) {
                            List<BurstBooks.Placed> where = placed(now);
                            if (!where.equals(p.placedAt(t))) {
                                p.placed.put(t, where);
                            }
                        }
                        p.last = all;
                        p.lastParked = parked;
                    } catch (RuntimeException e) {
                        // the API server busy for a second: the next second reads it again
                    }
                }
            }, 0, 1, TimeUnit.SECONDS);
            load.values().forEach(LoadGenerator::start);
            Inference scaled = functions.getFirst();
            System.out.printf(Locale.ROOT, "%ndemo: %d s of load (EMULATED GPUs), the view refreshes every 5 s:%n"
                            + "  %s, scaled by Dilu's autoscaler (%.0f rps per instance at its %d%% SM request, %.0f at its %d%%"
                            + " limit): 24 rps; at t=20–30 s a burst to 64 rps, beyond its request and within its limit, which"
                            + " vertical scaling absorbs (its grant rises, no new pod); at t=45–60 s a burst to 160 rps, beyond"
                            + " its limit, which the autoscaler scales out at once; then 24 rps, and it scales back in lazily,"
                            + " once 30 s of the last 40 need fewer pods, parking the pod it no longer needs (its SM request"
                            + " given back, its model kept in GPU memory); at t=%d–%d s the same burst again, which wakes it%n"
                            + "  bert-base: 40 rps steady on 2 pods%n"
                            + "  KLC ms is an instance's kernel launch cycle: from its first kernel launch to the synchronisation"
                            + " that ends it (one batch, for an inference server). The node agent's token manager compares it"
                            + " with the instance's best: stretched beyond 1.6× that, the GPU is in EMERGENCY and best-effort"
                            + " neighbours shrink; every 5 ms it re-divides each GPU's thread blocks (grant %%)%n"
                            + "  host: how late a thread of this process that wakes every 5 ms, as the token managers do, comes"
                            + " on this machine's CPUs; past %.0f ms at p99 the host is overloaded, and what the cluster shows"
                            + " is its pace, not Dilu's%n",
                    seconds, scaled.name(), scaled.rpsAtRequest(), scaled.sm(), scaled.rpsAtLimit(), 2 * scaled.sm(),
                    THIRD_BURST, THIRD_BURST + 10, HostLateness.OVERLOADED_P99_MS);
            Map<String, Double> previous = scrape();
            long previousAt = System.nanoTime();
            Shares shares = new Shares();
            Map<String, Integer> read = new HashMap<>();
            while (System.nanoTime() - start < seconds * 1_000_000_000L) {
                Thread.sleep(5_000);
                Map<String, Double> now = scrape();
                long nowAt = System.nanoTime();
                Map<String, double[]> interval = new HashMap<>();
                for (var e : load.entrySet()) {
                    double[] latencies = e.getValue().okLatenciesFrom(read.getOrDefault(e.getKey(), 0));
                    read.merge(e.getKey(), latencies.length, Integer::sum);
                    Arrays.sort(latencies);
                    interval.put(e.getKey(), latencies);
                }
                view((nowAt - start) / 1e9, previous, now, (nowAt - previousAt) / 1e9, functions, load, interval, pods, shares,
                        host.window((previousAt - start) / 1e9, (nowAt - start) / 1e9));
                previous = now;
                previousAt = nowAt;
            }
            Map<String, LoadResult> results = new TreeMap<>();
            for (var e : load.entrySet()) {
                results.put(e.getKey(), e.getValue().finished().get(2, TimeUnit.MINUTES));
            }
            poller.shutdownNow();
            summary(client, functions, results, pods, shares, seconds, host, lives);
        }
        http.shutdownNow();
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

    /** What the views saw: each training worker's share and its GPU's, and the scaled function's largest grant. */
    static final class Shares {
        /** Per training container: Σ its blocks %, Σ its GPU's blocks % (all instances), views. */
        final Map<String, double[]> workers = new TreeMap<>();
        /** Per view: its time and the largest grant % of one of the scaled function's pods. */
        final List<double[]> scaledGrant = new ArrayList<>();
        /** Per view and pod of the scaled function: its grant % on its GPU. */
        final List<BurstBooks.Grant> podGrants = new ArrayList<>();
    }

    static void view(double t, Map<String, Double> before, Map<String, Double> now, double dt, List<Inference> functions,
            Map<String, LoadGenerator> load, Map<String, double[]> p95, Map<String, Pods> pods, Shares shares,
            HostLateness.Window host) {
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "%n--- t=%.0f s (emulated GPUs) ---%n", t));
        out.append(String.format(Locale.ROOT, "  %-34s %-30s %8s %9s %8s %8s%n", "node / GPU", "instance", "grant %",
                "blocks %", "KLC ms", "p95 ms"));
        Map<String, List<String>> byGpu = new TreeMap<>();
        Map<String, Double> gpuBusy = new HashMap<>();
        Map<String, Double> workerBlocks = new HashMap<>();
        double scaledGrant = 0;
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
            String container = k[3].split("/")[2];
            String function = load.keySet().stream().filter(pod::startsWith).findFirst().orElse("");
            String gpu = k[1] + " " + k[2].substring(Math.max(0, k[2].length() - 22));
            gpuBusy.merge(gpu, blocks, Double::sum);
            if (function.isEmpty()) {
                workerBlocks.put(pod + "/" + container + "|" + gpu, blocks);
            } else if (function.equals(functions.getFirst().name())) {
                scaledGrant = Math.max(scaledGrant, grant);
                shares.podGrants.add(new BurstBooks.Grant(t, k[2], pod, grant));
            }
            double[] lat = p95.getOrDefault(function, new double[0]);
            byGpu.computeIfAbsent(gpu, g -> new ArrayList<>()).add(String.format(Locale.ROOT, "%-30s %8.1f %9.1f %8.2f %8s",
                    pod.length() > 22 ? pod.substring(0, 22) + "/" + container : pod + "/" + container,
                    grant, blocks, klc, lat.length == 0 ? "-" : String.format(Locale.ROOT, "%.1f", 1000 * percentile(lat, 0.95))));
        }
        workerBlocks.forEach((key, blocks) -> {
            double[] w = shares.workers.computeIfAbsent(key.substring(0, key.indexOf('|')), x -> new double[3]);
            w[0] += blocks;
            w[1] += gpuBusy.get(key.substring(key.indexOf('|') + 1));
            w[2]++;
        });
        shares.scaledGrant.add(new double[] {t, scaledGrant});
        byGpu.forEach((gpu, rows) -> {
            for (int i = 0; i < rows.size(); i++) {
                out.append(String.format(Locale.ROOT, "  %-34s %s%n", i == 0 ? gpu : "", rows.get(i)));
            }
        });
        for (Inference f : functions) {
            Progress l = load.get(f.name()).progress();
            Pods p = pods.get(f.name());
            out.append(String.format(Locale.ROOT, "  %s: %d pods (%d ready); in the last %.0f s %.0f rps due, %d answered;"
                    + " %d waiting, %d failed so far%n", f.name(), Math.max(0, p.last), p.ready.get().size(), dt,
                    (l.due() - p.dueBefore) / dt, p95.get(f.name()).length, l.buffered(), l.failed()));
            p.dueBefore = l.due();
            for (String event; (event = p.events.poll()) != null; ) {
                out.append("    autoscaler: ").append(event).append('\n');
            }
        }
        out.append(String.format(Locale.ROOT, "  host: a 5 ms wake-up %s%s%n", host.describe(),
                host.overloaded() ? " — OVERLOADED: the latencies above are this machine's pace, not Dilu's" : ""));
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

    static void summary(KubernetesClient client, List<Inference> functions, Map<String, LoadResult> results,
            Map<String, Pods> pods, Shares shares, int seconds, HostLateness host, PodLives lives) {
        System.out.println();
        System.out.println("Summary (emulated GPUs; latencies measured by the load generator, end to end over HTTP, waiting"
                + " included):");
        for (Inference f : functions) {
            LoadResult r = results.get(f.name());
            System.out.printf(Locale.ROOT, "  %-10s %6d requests, %d failed; p50 %.1f ms, p95 %.1f ms, p99 %.1f ms;"
                            + " %.2f%% late or failed (SLO %.0f ms)%n", f.name(), r.count(), r.failures(),
                    1000 * r.latencyPercentile(0.50), 1000 * r.latencyPercentile(0.95), 1000 * r.latencyPercentile(0.99),
                    100 * r.sloViolationRate(f.sloMs() / 1000), f.sloMs());
        }
        hostSummary(host, seconds).forEach(line -> System.out.println("  " + line));
        Inference scaled = functions.getFirst();
        for (String line : story(pods.get(scaled.name()), shares.scaledGrant, shares.podGrants, seconds,
                results.get(scaled.name()), scaled.sloMs() / 1000, host, lives.wakes(scaled.name()))) {
            System.out.println("  " + scaled.name() + ": " + line);
        }
        System.out.println("  " + scaled.name() + ": " + lateOverBursts(results.get(scaled.name()), scaled.sloMs() / 1000,
                host, seconds));
        System.out.println("  " + scaled.name() + ": " + books(pods.get(scaled.name()), scaled, lives.totals(scaled.name()),
                results.get(scaled.name())));
        Pod train = client.pods().inNamespace(NS).withName("gpt2-train").get();
        String limit = train == null ? "?" : train.getMetadata().getAnnotations().getOrDefault(DiluNames.SM_LIMIT, "?");
        shares.workers.forEach((worker, w) -> System.out.printf(Locale.ROOT,
                "  %s: %.1f%% of a GPU on average (its request 40%%, limit %s%%), on a GPU busy %.1f%% in all%n",
                worker, w[0] / w[2], limit, w[1] / w[2]));
        if (!shares.workers.isEmpty()) {
            System.out.println("  (a best-effort worker runs on what the inference instances beside it leave idle, up to its"
                    + " limit; while they run, on what they have shown they tolerate, and never on less than their SM"
                    + " limits leave it: docs/architecture.md, the token manager)");
        }
    }

    /**
     * What the host was like over the run: its lateness, and, where it was overloaded, in how many seconds and that
     * what the run measured then is the host's pace (each part of the story judges its own stretch).
     */
    static List<String> hostSummary(HostLateness host, int seconds) {
        HostLateness.Window run = host.window(0, seconds);
        List<String> out = new ArrayList<>();
        out.add("host: a thread of this process waking every 5 ms on absolute deadlines, as the node agents' token loops"
                + " do, came " + run.describe() + " over the run");
        int overloaded = host.overloadedSeconds(seconds);
        if (overloaded > 0) {
            out.add(String.format(Locale.ROOT, "the HOST WAS OVERLOADED in %d of the run's %d seconds (a 5 ms wake-up later"
                    + " than one %.0f ms token period at p99 in that second; over the run, p99 %.1f ms): then the token"
                    + " managers, the emulated GPUs and the servers waited for this machine's CPUs as that thread did, and"
                    + " what the run measured is the host's pace, neither Dilu's doing nor a measure of it; each part of the"
                    + " story below is judged by the host's lateness over its own stretch", overloaded, seconds,
                    HostLateness.OVERLOADED_P99_MS, run.p99Ms()));
        }
        return out;
    }

    /**
     * The scaled function's story in the run, from its pods each second and its largest grant in each view:
     * what the first burst did to its pods and grant, when the second scaled it out and when it came back in.
     * Where the host was overloaded in a stretch, what happened there is told as it happened, with the host's
     * lateness, and credited to Dilu or blamed on it not at all.
     */
    static List<String> story(Pods p, List<double[]> grants, List<BurstBooks.Grant> podGrants, int seconds, LoadResult load,
            double sloSeconds, HostLateness host, List<PodLives.Wake> wakes) {
        List<String> out = new ArrayList<>();
        if (seconds < 30) {
            return out;
        }
        int beforeFirst = Pods.known(p.total, 19);
        int peakFirst = maxPods(p.total, 20, Math.min(seconds, 45));
        if (beforeFirst == Pods.UNKNOWN || peakFirst == Pods.UNKNOWN) {
            out.add("its pods were not read from the API server before or during the first burst: no story to tell");
            return out;
        }
        double grant = grants.stream().filter(g -> g[0] > 20 && g[0] <= 35).mapToDouble(g -> g[1]).max().orElse(Double.NaN);
        String largestGrant = Double.isNaN(grant) ? "" : String.format(Locale.ROOT, "; its largest grant %.1f%% of a GPU", grant);
        HostLateness.Window first = host.window(20, 35);
        out.add("the burst to 64 rps (t=20–30 s): " + (first.overloaded()
                ? (peakFirst <= beforeFirst ? "still " + peakFirst + " pod(s)" : peakFirst + " pods") + largestGrant
                        + overloaded(first, "then")
                : (peakFirst <= beforeFirst ? "absorbed vertically, still " + peakFirst + " pod(s)"
                        : "scaled out to " + peakFirst + " pods") + largestGrant));
        if (seconds < 60) {
            return out;
        }
        int end = Math.min(seconds, THIRD_BURST);
        HostLateness.Window second = host.window(45, 75);
        int before = Pods.known(p.total, 44);
        int out1 = -1;
        for (int t = 45; t < end && out1 < 0; t++) {
            if (p.total[t] != Pods.UNKNOWN && p.unparked(t) > before) {
                out1 = t;
            }
        }
        if (out1 < 0) {
            out.add("the burst to 160 rps (t=45–60 s): no scale-out"
                    + (second.overloaded() ? overloaded(second, "at t=45–75 s") : ""));
            return out;
        }
        // From the scale-out on: its peak, and when the pods not parked were back to what they were before it; never
        // earlier.
        int peak = 0;
        int back = -1;
        for (int t = out1; t < end && back < 0; t++) {
            if (p.total[t] == Pods.UNKNOWN) {
                continue;
            }
            if (p.unparked(t) <= before) {
                back = t;
            } else {
                peak = Math.max(peak, p.unparked(t));
            }
        }
        int parkedBack = back < 0 ? 0 : Math.max(0, p.parked[back]);
        int ready = -1;
        for (int t = out1; t < (back < 0 ? end : back) && ready < 0; t++) {
            if (p.readyCount[t] >= peak) {
                ready = t;
            }
        }
        out.add(String.format(Locale.ROOT, "the burst to 160 rps (t=45–60 s): scaled out at t=%d s to %d pods%s; %s%s", out1,
                peak, ready < 0 ? "" : ", all ready at t=" + ready + " s",
                back < 0 ? "not yet back to " + before + (seconds < THIRD_BURST ? " when the run ended" : " by the next burst")
                        : "back to " + before + (parkedBack == 0 ? "" : " serving") + " at t=" + back + " s"
                                + (parkedBack == 0 ? "" : ", " + parkedBack + " parked (its SM request given back, its model kept"
                                        + " in GPU memory)") + " (scale-in waits until 30 of 40 seconds need fewer pods)",
                second.overloaded() ? overloaded(second, "at t=45–75 s") : ""));
        int at = ready < 0 ? (back < 0 ? end - 1 : back - 1) : ready;
        BurstBooks.Burst scaling = BurstBooks.BURSTS.getFirst();
        out.add("where: " + BurstBooks.where(p.placedAt(at), podGrants, at, scaling.from(), scaling.queueUntil()));
        if (seconds >= THIRD_BURST + 10) {
            out.add(thirdBurst(p, wakes, seconds, host));
            BurstBooks.Burst waking = BurstBooks.BURSTS.getLast();
            int to = Math.min(seconds, waking.queueUntil());
            int peakAt = waking.from();
            for (int t = waking.from(); t < to; t++) {
                if (p.unparked(t) > p.unparked(peakAt)) {
                    peakAt = t;
                }
            }
            out.add("where: " + BurstBooks.where(p.placedAt(peakAt), podGrants, peakAt, waking.from(), to));
        }
        return out;
    }

    /**
     * The scaled function's late requests over the bursts' windows, those due while a burst arrived apart from those due
     * in the queue it left, and over the other seconds ({@link BurstBooks#late}), with the host's lateness where it was
     * overloaded in either.
     */
    static String lateOverBursts(LoadResult load, double sloSeconds, HostLateness host, int seconds) {
        HostLateness.Window bursts = host.over(t -> t < seconds && BurstBooks.burstAt((int) t) != null);
        HostLateness.Window others = host.over(t -> t < seconds && BurstBooks.burstAt((int) t) == null);
        return BurstBooks.late(load.requests(), sloSeconds) + (bursts.overloaded() ? overloaded(bursts, "in the bursts") : "")
                + (others.overloaded() ? overloaded(others, "in the other seconds") : "");
    }

    /** The third burst: whether it woke the pod the second one added, and how fast, or started pods (cold starts). */
    static String thirdBurst(Pods p, List<PodLives.Wake> wakes, int seconds, HostLateness host) {
        int from = THIRD_BURST;
        int to = Math.min(seconds, THIRD_BURST + 20);
        HostLateness.Window w = host.window(from, to);
        String when = String.format(Locale.ROOT, "the burst to 160 rps (t=%d–%d s): ", from, from + 10);
        List<PodLives.Wake> woken = wakes.stream().filter(k -> k.at() >= from && k.at() < to).toList();
        int before = Pods.known(p.total, from - 1);
        int peak = maxPods(p.total, from, to);
        String started = before == Pods.UNKNOWN || peak <= before ? "no new pod" : "scaled out to " + peak + " pods (cold starts)";
        String wokeText = woken.isEmpty() ? "woke no parked pod" : String.format(Locale.ROOT,
                "woke %d parked pod(s) at t=%.0f s, serving %.2f s after the autoscaler's wake (its model still in GPU memory)",
                woken.size(), woken.getFirst().at(), woken.stream().mapToDouble(PodLives.Wake::seconds).average().orElse(0));
        return when + wokeText + "; " + started + (w.overloaded() ? overloaded(w, "then") : "");
    }

    /**
     * The scaled function's books over the run, as the co-scaling benches keep them (docs/coscaling.md, "The books"):
     * cold starts after t=0 split into scale-out and failed wake, wakes and their time, SVR, SM GPU-seconds (a parked
     * pod 0), GPU-memory GiB·s, dominant-share GPU-seconds. A second the pods were not read in counts the last read.
     */
    static String books(Pods p, Inference f, PodLives.Totals totals, LoadResult load) {
        int seconds = p.total.length;
        int[] instances = new int[seconds];
        double[] sm = new double[seconds];
        for (int t = 0; t < seconds; t++) {
            int all = Math.max(0, Pods.known(p.total, t));
            int parked = Math.max(0, Pods.known(p.parked, t));
            instances[t] = all;
            sm[t] = Math.max(0, all - parked) * f.sm() / 100.0;
        }
        CoScalingSimulation.Books b = CoScalingSimulation.Books.measured(totals.coldStarts() - totals.failedWakes(),
                totals.failedWakes(), totals.wakes(), totals.wakeSeconds(), instances, sm, f.sm() / 100.0, f.memoryMib(),
                ClusterShape.PAPER.gpuMemoryMib());
        return String.format(Locale.ROOT, "books: %d cold start(s) after t=0 (%d scale-out, %d failed wake), %d wake(s)%s;"
                        + " SVR %.2f%%; SM GPU-s %.1f (a parked pod 0), GPU memory %.0f GiB·s, dominant-share GPU-s %.1f",
                b.coldStarts(), b.scaleOutColdStarts(), b.failedWakeColdStarts(), b.wakes(),
                b.wakes() == 0 ? "" : String.format(Locale.ROOT, " (mean %.2f s)", b.meanWakeSeconds()),
                100 * load.sloViolationRate(f.sloMs() / 1000), Arrays.stream(sm).sum(), b.memoryGibSeconds(),
                b.dominantGpuSeconds());
    }

    private static String overloaded(HostLateness.Window w, String when) {
        return String.format(Locale.ROOT, "; the host was overloaded %s (a 5 ms wake-up late by p99 %.1f ms): neither Dilu's"
                + " doing nor a measure of it", when, w.p99Ms());
    }

    /** The most pods read in [from, to), or {@link Pods#UNKNOWN} if none was read. */
    static int maxPods(int[] pods, int from, int to) {
        int max = Pods.UNKNOWN;
        for (int t = from; t < to; t++) {
            max = Math.max(max, pods[t]);
        }
        return max;
    }
}
