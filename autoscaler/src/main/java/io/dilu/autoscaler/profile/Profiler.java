package io.dilu.autoscaler.profile;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileStatus;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.net.HttpURLConnection;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * The profiler: while this replica leads, finds GpuFunctionProfiles to profile and runs a {@link ProfileJob}
 * for each (a few at a time), whose trials run as pods ({@link TrialPods}). The Kubernetes side only: creating
 * and deleting trial pods, watching them, writing profile status. A replica that stops leading stops its jobs;
 * the next leader resumes them from the trials recorded in their status.
 */
public final class Profiler implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Profiler.class);
    /** How often the trial pod's status is read from the watch. */
    private static final Duration POLL = Duration.ofMillis(250);
    /** A trial's memory where no node says what its GPUs have (the node agent's default share). */
    static final long DEFAULT_TRIAL_MEMORY_MIB = 1024;

    private final KubernetesClient client;
    private final AutoscalerConfig.Profiler config;
    private final InstantSource clock;
    private final SharedIndexInformer<GpuFunctionProfile> profiles;
    private final SharedIndexInformer<Pod> trialPods;
    /** GPU nodes: the largest GPU's memory for a trial, the GPU model a trial ran on. */
    private final SharedIndexInformer<Node> nodes;
    private final ScheduledExecutorService scanner = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-profiler-scan").unstarted(r));
    private final ExecutorService workers;
    private final Map<String, Future<?>> running = new ConcurrentHashMap<>();
    private volatile ScheduledFuture<?> scanning;

    public Profiler(KubernetesClient client, AutoscalerConfig.Profiler config, InstantSource clock) {
        this.client = client;
        this.config = config;
        this.clock = clock;
        this.workers = Executors.newFixedThreadPool(config.parallel(),
                r -> Thread.ofPlatform().daemon().name("dilu-profiler").unstarted(r));
        this.profiles = client.resources(GpuFunctionProfile.class).inAnyNamespace().runnableInformer(0);
        this.trialPods = client.pods().inAnyNamespace().withLabel(TrialPods.ROLE_LABEL, TrialPods.ROLE).runnableInformer(0);
        this.nodes = client.nodes().runnableInformer(0);
        profiles.exceptionHandler((started, t) -> true);
        trialPods.exceptionHandler((started, t) -> true);
        nodes.exceptionHandler((started, t) -> true);
    }

    public void start() {
        profiles.start();
        trialPods.start();
        nodes.start();
    }

    /** Starts profiling: this replica holds the Lease. */
    public void lead() {
        scanning = scanner.scheduleWithFixedDelay(this::scan, 0, config.scanInterval().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Stops every job: another replica leads now and will resume them. */
    public void follow() {
        if (scanning != null) {
            scanning.cancel(false);
        }
        running.values().forEach(f -> f.cancel(true));
        running.clear();
    }

    @Override
    public void close() {
        follow();
        scanner.shutdownNow();
        workers.shutdownNow();
        profiles.close();
        trialPods.close();
        nodes.close();
    }

    private void scan() {
        try {
            running.values().removeIf(Future::isDone);
            for (GpuFunctionProfile cached : profiles.getStore().list()) {
                String key = cached.getMetadata().getUid();
                if (running.size() >= config.parallel() || key == null || running.containsKey(key) || !ProfileJob.needsWork(cached)) {
                    continue;
                }
                // The watch may not have delivered the status a job just finished with: ask, or that job runs twice.
                GpuFunctionProfile p = client.resources(GpuFunctionProfile.class).inNamespace(cached.getMetadata().getNamespace())
                        .withName(cached.getMetadata().getName()).get();
                if (p == null || !key.equals(p.getMetadata().getUid()) || !ProfileJob.needsWork(p)) {
                    continue;
                }
                long memory = trialMemory(p);
                ProfileJob job = new ProfileJob(p, (profile, sm, batch, attempt) -> runTrial(profile, sm, batch, attempt, memory),
                        this::writeStatus, this::gpuOf, config.retries(), memory, clock);
                running.put(key, workers.submit(() -> {
                    try {
                        job.run();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } catch (RuntimeException e) {
                        LOG.errorf(e, "profiling %s/%s failed; the next scan retries", p.getMetadata().getNamespace(),
                                p.getMetadata().getName());
                    }
                }));
            }
        } catch (RuntimeException e) {
            LOG.errorf(e, "profile scan failed; the next scan retries");
        }
    }

    /** Creates the attempt's pod unless it exists (a previous leader's), waits for its outcome, deletes it. */
    private TrialPods.Outcome runTrial(GpuFunctionProfile profile, int sm, int batch, int attempt, long memoryMib)
            throws InterruptedException {
        String ns = profile.getMetadata().getNamespace();
        String name = TrialPods.name(profile.getMetadata().getName(), sm, batch, attempt);
        // The pod's own deadline runs from its start; this one also covers scheduling and image pulls.
        Instant deadline = clock.instant().plus(config.trialTimeout().multipliedBy(2));
        Pod trial = TrialPods.pod(profile, sm, batch, attempt, config.trialTimeout(), memoryMib);
        try {
            if (pod(ns, name).isEmpty()) {
                client.pods().inNamespace(ns).resource(trial).create();
            }
        } catch (KubernetesClientException e) {
            int code = e.getCode();
            if (code == 0 || code == 429 || code >= 500) {
                throw e; // the API server's trouble, not the pod's: the job ends and the next scan resumes it
            }
            if (code != HttpURLConnection.HTTP_CONFLICT) {
                // Refused (by admission, say): the reason is the API server's, and no attempt will do better.
                return new TrialPods.Fatal("PodRefused: " + TrialPods.clip(e.getStatus() == null ? e.getMessage()
                        : e.getStatus().getMessage()));
            }
        }
        // Interrupted (leadership lost), the pod is left for the next leader, which adopts it by its name.
        boolean seen = false;
        while (clock.instant().isBefore(deadline)) {
            Optional<Pod> pod = pod(ns, name);
            if (pod.isEmpty() && seen) {
                return new TrialPods.Retry("the trial pod was deleted before it finished");
            }
            seen |= pod.isPresent();
            TrialPods.Outcome outcome = pod.map(TrialPods::outcome).orElse(new TrialPods.Running());
            if (!(outcome instanceof TrialPods.Running)) {
                delete(ns, name);
                return outcome;
            }
            Thread.sleep(POLL.toMillis());
        }
        String pending = pod(ns, name).map(Profiler::pendingReason).orElse("");
        delete(ns, name);
        return new TrialPods.Retry("no result within " + config.trialTimeout().multipliedBy(2).toSeconds() + " s" + pending);
    }

    private Optional<Pod> pod(String ns, String name) {
        Pod cached = trialPods.getStore().getByKey(ns + "/" + name);
        return Optional.ofNullable(cached != null ? cached : client.pods().inNamespace(ns).withName(name).get());
    }

    private static String pendingReason(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getConditions() == null) {
            return "";
        }
        return pod.getStatus().getConditions().stream().filter(c -> "False".equals(c.getStatus()) && c.getReason() != null)
                .findFirst().map((PodCondition c) -> " (" + c.getReason() + ": " + TrialPods.clip(c.getMessage()) + ")").orElse("");
    }

    private void delete(String ns, String name) {
        try {
            client.pods().inNamespace(ns).withName(name).withGracePeriod(0).delete();
        } catch (KubernetesClientException e) {
            LOG.warnf("could not delete trial pod %s/%s: %s (its owner's deletion removes it)", ns, name, e.getMessage());
        }
    }

    /**
     * A trial's GPU memory: the spec's bound when it gives one, else the largest GPU's (from the nodes' inventories),
     * so that the function is measured with all the memory it may want; else the agent's default.
     */
    private long trialMemory(GpuFunctionProfile profile) {
        if (profile.getSpec().memoryMiB() != null) {
            return profile.getSpec().memoryMiB();
        }
        return nodes.getStore().list().stream().flatMap(n -> InventoryAnnotation.ofNode(n).stream())
                .mapToLong(GpuDevice::memoryMib).max().orElse(DEFAULT_TRIAL_MEMORY_MIB);
    }

    /** The model of a node's first GPU as its inventory says, marked when emulated; the node's name when it says none. */
    private String gpuOf(String nodeName) {
        Node node = nodes.getStore().getByKey(nodeName);
        return (node == null ? List.<GpuDevice>of() : InventoryAnnotation.ofNode(node)).stream().findFirst()
                .map(g -> g.emulated() ? "emulated " + g.model() : g.model()).orElse("node " + nodeName);
    }

    /** Writes the status of the profile the job started from, unless it went or its spec changed since. */
    private boolean writeStatus(GpuFunctionProfile started, ProfileStatus status) {
        var api = client.resources(GpuFunctionProfile.class).inNamespace(started.getMetadata().getNamespace());
        for (int attempt = 0; attempt < 5; attempt++) {
            GpuFunctionProfile now = api.withName(started.getMetadata().getName()).get();
            if (now == null || !now.getMetadata().getUid().equals(started.getMetadata().getUid())
                    || !java.util.Objects.equals(now.getMetadata().getGeneration(), started.getMetadata().getGeneration())) {
                return false;
            }
            now.setStatus(status);
            try {
                api.resource(now).updateStatus();
                return true;
            } catch (KubernetesClientException e) {
                if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                    throw e;
                }
            }
        }
        throw new IllegalStateException("status of " + started.getMetadata().getName() + " kept conflicting");
    }
}
