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
 * The profiler: while this replica leads, finds GpuFunctionProfiles to profile and runs their trials as pods
 * ({@link TrialPods}), one trial per {@link ProfileJob} (which replays the search from the status and runs the next
 * trial), a few at a time: {@link TrialSlots} decides whose trial runs when, fairly between namespaces. The Kubernetes
 * side only: creating and deleting trial pods, watching them, writing profile status. A replica that stops leading
 * stops its jobs; the next leader resumes them from the trials recorded in their status.
 */
public final class Profiler implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Profiler.class);
    /** How often the trial pod's status is read from the watch. */
    private static final Duration POLL = Duration.ofMillis(250);
    /** What a grant may hold its slot beyond its attempts' timeouts: the API calls around them. */
    static final Duration HOLD_MARGIN = Duration.ofSeconds(30);
    /** The condition reason of a profile left out by its namespace's quota. */
    static final String QUOTA_EXCEEDED = "QuotaExceeded";
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
    /** The trials running, by profile uid; touched on the scan thread only. */
    private final Map<String, Running> running = new ConcurrentHashMap<>();
    private final TrialSlots slots;
    private volatile ScheduledFuture<?> scanning;
    private volatile boolean leading;

    /** Numbers the grants, so that a job that ends frees its own grant and not a later one of the same profile. */
    private final java.util.concurrent.atomic.AtomicLong grants = new java.util.concurrent.atomic.AtomicLong();

    /** A profile's trial being run, by its grant. */
    private record Running(TrialSlots.Profile profile, long grant, Future<?> job) {}

    public Profiler(KubernetesClient client, AutoscalerConfig.Profiler config, InstantSource clock) {
        this.client = client;
        this.config = config;
        this.clock = clock;
        // A grant may hold its slot for every attempt's timeout, and a little for the API calls around them.
        this.slots = new TrialSlots(new TrialSlots.Limits(config.parallel(), config.maxTrialsPerNamespace(),
                config.maxQueuedPerNamespace(), config.trialTimeout().multipliedBy(config.retries() + 1L).plus(HOLD_MARGIN)));
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
        leading = true;
        scanning = scanner.scheduleWithFixedDelay(this::scan, 0, config.scanInterval().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Stops every job: another replica leads now and will resume them. */
    public void follow() {
        leading = false;
        if (scanning != null) {
            scanning.cancel(false);
        }
        // On the scan thread, which alone touches the slots; a scan under way finishes first.
        onScanThread(() -> {
            running.values().forEach(r -> r.job().cancel(true));
            running.clear();
            slots.clear();
        });
    }

    private void onScanThread(Runnable task) {
        try {
            scanner.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed
        }
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
        if (!leading) {
            return; // a rescan asked for by a job that ended after this replica stopped leading
        }
        try {
            Instant now = clock.instant();
            for (TrialSlots.Profile p : slots.expired(now)) {
                end(p);
            }
            List<TrialSlots.Profile> wanting = profiles.getStore().list().stream()
                    .filter(p -> p.getMetadata().getUid() != null && ProfileJob.needsWork(p)).map(Profiler::slotOf).toList();
            TrialSlots.Plan plan = slots.plan(wanting, now);
            plan.overQuota().forEach(this::overQuota);
            for (TrialSlots.Profile p : plan.start()) {
                start(p);
            }
        } catch (RuntimeException e) {
            LOG.errorf(e, "profile scan failed; the next scan retries");
        }
    }

    private static TrialSlots.Profile slotOf(GpuFunctionProfile p) {
        String created = p.getMetadata().getCreationTimestamp();
        Instant at;
        try {
            at = created == null ? null : Instant.parse(created);
        } catch (java.time.format.DateTimeParseException e) {
            at = null;
        }
        return new TrialSlots.Profile(p.getMetadata().getNamespace(), p.getMetadata().getName(), p.getMetadata().getUid(), at);
    }

    /** Runs the profile's next trial on a worker; its slot is freed when the job ends, and the profiles looked over again. */
    private void start(TrialSlots.Profile slot) {
        // The watch may not have delivered the status a job just finished with: ask, or that trial runs twice.
        GpuFunctionProfile p = client.resources(GpuFunctionProfile.class).inNamespace(slot.namespace()).withName(slot.name()).get();
        if (p == null || !slot.uid().equals(p.getMetadata().getUid()) || !ProfileJob.needsWork(p)) {
            slots.finished(slot.uid());
            return;
        }
        long memory = trialMemory(p);
        ProfileJob job = new ProfileJob(p, (profile, sm, batch, attempt) -> runTrial(profile, sm, batch, attempt, memory),
                this::writeStatus, this::gpuOf, config.retries(), memory, clock, 1);
        long grant = grants.incrementAndGet();
        running.put(slot.uid(), new Running(slot, grant, workers.submit(() -> {
            try {
                job.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                LOG.errorf(e, "profiling %s/%s failed; the next scan retries", slot.namespace(), slot.name());
            } finally {
                onScanThread(() -> finished(slot.uid(), grant));
            }
        })));
    }

    /** A job ended: its slot is free, and the profiles are looked over at once rather than at the next interval. */
    private void finished(String uid, long grant) {
        Running r = running.get(uid);
        if (r != null && r.grant() == grant) {
            running.remove(uid);
            slots.finished(uid);
        }
        scan();
    }

    /**
     * A grant held its slot past every attempt's timeout (its worker is stuck on the API server, say): its job is
     * stopped, its trial pods deleted, and its slot freed; the profile queues again.
     */
    private void end(TrialSlots.Profile slot) {
        LOG.warnf("profile %s/%s held its trial slot past %s; its trial is ended", slot.namespace(), slot.name(),
                config.trialTimeout().multipliedBy(config.retries() + 1L).plus(HOLD_MARGIN));
        Running r = running.remove(slot.uid()); // its job's end then frees nothing: the slot is freed here
        if (r != null) {
            r.job().cancel(true);
        }
        for (Pod pod : trialPods.getStore().list()) {
            if (slot.namespace().equals(pod.getMetadata().getNamespace()) && pod.getMetadata().getAnnotations() != null
                    && slot.name().equals(pod.getMetadata().getAnnotations().get(TrialPods.TRIAL_OF))) {
                delete(slot.namespace(), pod.getMetadata().getName());
            }
        }
        slots.finished(slot.uid());
    }

    /** Says on the profile why it waits, unless it says so already for this generation. */
    private void overQuota(TrialSlots.Profile slot, String why) {
        GpuFunctionProfile cached = profiles.getStore().getByKey(slot.namespace() + "/" + slot.name());
        if (cached == null || (cached.current() && cached.condition(GpuFunctionProfile.PROFILING)
                .map(c -> QUOTA_EXCEEDED.equals(c.getReason())).orElse(false))) {
            return;
        }
        long generation = Optional.ofNullable(cached.getMetadata().getGeneration()).orElse(0L);
        List<io.dilu.kube.profile.TrialRecord> trials = cached.current() && cached.getStatus().trials() != null
                ? cached.getStatus().trials() : List.of();
        try {
            writeStatus(cached, ProfileStatuses.waiting(generation, trials, QUOTA_EXCEEDED, why, cached.getStatus(), clock.instant()));
        } catch (KubernetesClientException e) {
            LOG.warnf("could not say why %s/%s waits: %s", slot.namespace(), slot.name(), e.getMessage());
        }
    }

    /** Creates the attempt's pod unless it exists (a previous leader's), waits for its outcome, deletes it. */
    private TrialPods.Outcome runTrial(GpuFunctionProfile profile, int sm, int batch, int attempt, long memoryMib)
            throws InterruptedException {
        String ns = profile.getMetadata().getNamespace();
        String name = TrialPods.name(profile.getMetadata().getName(), sm, batch, attempt);
        // From the pod's creation: scheduling and the image pull count; the pod's own deadline runs from its start.
        Instant deadline = clock.instant().plus(config.trialTimeout());
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
        return new TrialPods.Retry("no result within " + config.trialTimeout().toSeconds() + " s" + pending);
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
