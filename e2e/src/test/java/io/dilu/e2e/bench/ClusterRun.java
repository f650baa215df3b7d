package io.dilu.e2e.bench;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.e2e.cluster.PodLives;
import io.dilu.e2e.cluster.ServingFunction;
import io.dilu.e2e.bench.CoScalingClusterBench.Function;
import io.dilu.e2e.bench.CoScalingClusterBench.Measured;
import io.dilu.loadgen.LoadGenerator;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.Outcome;
import io.dilu.loadgen.RequestRecord;
import io.dilu.simulator.coscaling.CoScalingPolicy;
import io.dilu.simulator.coscaling.KpaPolicy;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * One policy's run of the co-scaling experiment on the cluster: deploys the training job and the functions into
 * a namespace of its own, replays the traces, samples the functions' pods every second, and measures.
 */
final class ClusterRun implements Callable<Map<String, Measured>> {

    /** The training job's SM request (percent of a GPU, its limit the default) and GPU memory, deployed first. */
    static final int TRAINING_SM = 40;
    static final int TRAINING_MEMORY_MIB = 8192;

    private final KubernetesClient client;
    private final String policy;
    private final String ns;
    private final List<Function> functions;
    private final int seconds;
    /** Where each function's requests are written, one CSV per function. */
    private final Path out;
    private volatile long t0 = System.nanoTime();
    private final PodLives pods = new PodLives(KnativeNames.REVISION_LABEL, this::now);

    ClusterRun(KubernetesClient client, String policy, List<Function> functions, int seconds, Path out) {
        this.out = out;
        this.client = client;
        this.policy = policy;
        this.ns = "cs-" + policy;
        this.functions = functions;
        this.seconds = seconds;
    }

    double now() {
        return (System.nanoTime() - t0) / 1e9;
    }

    /** When the traffic ran, in seconds from {@code originNanos}: the span the host's lateness is read over. */
    double[] trafficSpan(long originNanos) {
        double from = (t0 - originNanos) / 1e9;
        return new double[] {from, from + seconds};
    }

    @Override
    public Map<String, Measured> call() throws Exception {
        System.out.printf("%n== %s: deploying into namespace %s%n", policy, ns);
        deploy();
        try (SharedIndexInformer<Pod> informer = client.pods().inNamespace(ns).inform(pods, 0)) {
            awaitOneReadyEach(informer);
            return measure(informer);
        } finally {
            client.namespaces().withName(ns).delete();
            client.namespaces().withName(ns).waitUntilCondition(n -> n == null, 3, TimeUnit.MINUTES);
        }
    }

    private void deploy() {
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns)
                .addToLabels(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_ENABLED).addToLabels("dilu.io/allow-slo", "true")
                .endMetadata().build()).serverSideApply();
        // The training job first, as on a cluster where it runs already when the functions scale out.
        String train = "exec emu-train --seconds 86400 --kernels 8 --blocks 432 --block-us 100 --gap-ms 1";
        client.pods().inNamespace(ns).resource(new PodBuilder().withNewMetadata().withName("train")
                .addToLabels("app", "train").endMetadata()
                .withNewSpec().withTerminationGracePeriodSeconds(1L)
                .withContainers(gpu("worker", TRAINING_SM, TRAINING_MEMORY_MIB, train)).endSpec().build()).serverSideApply();
        client.pods().inNamespace(ns).withName("train")
                .waitUntilCondition(p -> p != null && p.getSpec().getNodeName() != null, 2, TimeUnit.MINUTES);
        for (Function f : functions) {
            int sm = (int) Math.round(f.profile().requestShare() * 100);
            Map<String, String> annotations = policy.equals("kpa")
                    ? Map.of(DiluNames.SM_LIMIT, Integer.toString(sm)) // a static share: limit = request
                    : ServingFunction.DILU_SCALED;
            ServingFunction.deploy(client, ns, f.name(), 1, sm, (int) f.profile().memoryMiB(), annotations,
                    "--load-ms " + (f.profile().coldStartSeconds() - 1) * 1000 + " " + f.model());
            if (policy.equals("dilu")) {
                ServingFunction.autoscale(client, ns, f.name(), f.profile().rpsAtRequest(), f.profile().rpsAtLimit());
            }
        }
    }

    private static Container gpu(String name, int sm, int memoryMib, String script) {
        return new ContainerBuilder().withName(name).withImage("dilu.local/workload:0.1.0")
                .withImagePullPolicy("Never").withCommand("/bin/sh", "-c", script).withNewResources()
                .addToLimits(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)))
                .addToLimits(DiluNames.GPU_MEMORY, new Quantity(Integer.toString(memoryMib))).endResources().build();
    }

    /** The function's ready pods, as the informer has them: what the load generator may send to. */
    private List<URI> readyTargets(SharedIndexInformer<Pod> informer, String function) {
        return informer.getStore().list().stream()
                .filter(p -> function.equals(p.getMetadata().getLabels().get(KnativeNames.REVISION_LABEL)))
                .map(ServingFunction::target).flatMap(Optional::stream).toList();
    }

    private void awaitOneReadyEach(SharedIndexInformer<Pod> informer) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (functions.stream().anyMatch(f -> readyTargets(informer, f.name()).isEmpty())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(policy + ": a function has no ready pod after 3 minutes: "
                        + functions.stream().map(f -> f.name() + "=" + readyTargets(informer, f.name()).size()).toList());
            }
            Thread.sleep(500);
        }
        System.out.printf("%s: one ready pod per function; the traffic starts%n", policy);
    }

    private Map<String, Measured> measure(SharedIndexInformer<Pod> informer) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        Map<String, LoadGenerator> load = new LinkedHashMap<>();
        Map<String, CoScalingPolicy> kpa = new LinkedHashMap<>();
        Map<String, double[]> arrivals = new LinkedHashMap<>();
        Map<String, int[]> instances = new LinkedHashMap<>();
        Map<String, double[]> share = new LinkedHashMap<>();
        Map<String, Integer> replicas = new LinkedHashMap<>();
        for (Function f : functions) {
            load.put(f.name(), new LoadGenerator(f.trace(), seed(f), () -> readyTargets(informer, f.name()), http,
                    ServingFunction.LOAD, System::nanoTime));
            kpa.put(f.name(), KpaPolicy.kpa(f.profile()));
            arrivals.put(f.name(), new double[seconds]);
            instances.put(f.name(), new int[seconds]);
            share.put(f.name(), new double[seconds]);
            replicas.put(f.name(), 1);
        }
        pods.markInitial();
        t0 = System.nanoTime();
        load.values().forEach(LoadGenerator::start);
        Map<String, Integer> dueBefore = new LinkedHashMap<>();
        functions.forEach(f -> dueBefore.put(f.name(), 0));
        for (int t = 0; t < seconds; t++) {
            long wake = t0 + (t + 1) * 1_000_000_000L;
            long wait = wake - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            StringBuilder line = new StringBuilder();
            for (Function f : functions) {
                int due = load.get(f.name()).progress().due();
                arrivals.get(f.name())[t] = due - dueBefore.get(f.name());
                dueBefore.put(f.name(), due);
                PodLives.Counts c = pods.count(f.name());
                instances.get(f.name())[t] = c.instances();
                share.get(f.name())[t] = (c.instances() - c.parked()) * f.profile().requestShare(); // a parked pod books no SM
                if (policy.equals("kpa")) {
                    int want = kpa.get(f.name()).decide(arrivals.get(f.name()), t, c.serving(),
                            c.instances() - c.serving() - c.parked(), c.parked()).desired();
                    if (want != replicas.get(f.name())) {
                        client.apps().deployments().inNamespace(ns).withName(f.name()).scale(want);
                        replicas.put(f.name(), want);
                    }
                }
                line.append(String.format(Locale.ROOT, "  %s %3.0f rps %d pods", f.name(), arrivals.get(f.name())[t], c.instances()));
            }
            if (t % 30 == 29) {
                System.out.printf(Locale.ROOT, "%s t=%3d s:%s%n", policy, t + 1, line);
            }
        }
        Map<String, Measured> measured = new LinkedHashMap<>();
        for (Function f : functions) {
            LoadResult result = load.get(f.name()).finished().get(2, TimeUnit.MINUTES);
            try (var w = Files.newBufferedWriter(out.resolve(policy + "-" + f.name() + "-requests.csv"))) {
                result.writeCsv(w);
            }
            Map<Outcome.Failure, Long> failures = new java.util.EnumMap<>(Outcome.Failure.class);
            for (Outcome.Failure kind : Outcome.Failure.values()) {
                if (result.failures(kind) > 0) {
                    failures.put(kind, result.failures(kind));
                }
            }
            System.out.printf(Locale.ROOT, "%s %s: %d requests, p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, non-2xx %d, failed %s%n",
                    policy, f.name(), result.count(), 1000 * result.latencyPercentile(0.5), 1000 * result.latencyPercentile(0.95),
                    1000 * result.latencyPercentile(0.99), result.errorStatuses(), failures);
            double[] late = new double[seconds];
            double violations = 0;
            for (RequestRecord r : result.requests()) {
                boolean isLate = !(r.outcome() instanceof Outcome.Answered a && a.status() / 100 == 2
                        && a.latencySeconds() <= f.profile().sloSeconds());
                if (isLate) {
                    violations++;
                    late[Math.min(seconds - 1, r.second())]++;
                }
            }
            PodLives.Totals p = pods.totals(f.name());
            measured.put(f.name(), new Measured(f.name(), p.coldStarts(), p.failedWakes(), p.coldStartMeanS(), p.wakes(),
                    p.wakeSeconds(), result.count(), violations, Arrays.stream(share.get(f.name())).sum(),
                    instances.get(f.name()), share.get(f.name()), late));
        }
        return measured;
    }

    private static long seed(Function f) {
        return f.name().hashCode();
    }
}
