package io.dilu.autoscaler;

import io.dilu.autoscaler.activator.ActivatorConfig;
import io.dilu.autoscaler.activator.ActivatorPods;
import io.dilu.autoscaler.activator.ActivatorSender;
import io.dilu.autoscaler.activator.ActivatorStats;
import io.dilu.autoscaler.activator.ActivatorStatsServer;
import io.dilu.autoscaler.activator.RevisionKey;
import io.dilu.autoscaler.history.ConfigMapHistoryStore;
import io.dilu.autoscaler.knative.PaReconciler;
import io.dilu.autoscaler.knative.PaWriter;
import io.dilu.autoscaler.profile.Profiler;
import io.dilu.autoscaler.scrape.StatScraper;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElector;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Runs the PodAutoscaler reconciler and the profiler while this replica holds the Lease: two replicas never
 * scale the same revision or run the same trial. A replica that loses the Lease stops ticking at once and waits to win it again.
 * Installed to replace Knative's autoscaler, the leader also takes the activator's reports and decides a revision
 * at zero as soon as one reports requests for it. What the revisions' scalers learn is kept in ConfigMaps beside the
 * Lease ({@link ConfigMapHistoryStore}), so that the next leader continues from it.
 */
@ApplicationScoped
public class AutoscalerApp {

    private static final Logger LOG = Logger.getLogger(AutoscalerApp.class);

    private final KubernetesClient client;
    private final AutoscalerConfig config;
    private final MeterRegistry metrics;
    private final InstantSource clock;
    private final TickProgress progress;
    private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-autoscaler-tick").unstarted(r));
    private final ExecutorService io = Executors.newFixedThreadPool(4,
            r -> Thread.ofPlatform().daemon().name("dilu-autoscaler-scrape").unstarted(r));
    private PaReconciler reconciler;
    private Profiler profiler;
    private volatile ScheduledFuture<?> ticking;
    private CompletableFuture<?> election;
    private volatile boolean leading;
    private final Set<RevisionKey> pokes = ConcurrentHashMap.newKeySet();
    private final ActivatorStatsServer activators;
    private final ActivatorConfig activatorConfig;
    private ActivatorPods activatorPods;

    public AutoscalerApp(KubernetesClient client, AutoscalerConfig config, MeterRegistry metrics, InstantSource clock,
            TickProgress progress, ActivatorStatsServer activators, ActivatorConfig activatorConfig) {
        this.activators = activators;
        this.activatorConfig = activatorConfig;
        this.client = client;
        this.config = config;
        this.metrics = metrics;
        this.clock = clock;
        this.progress = progress;
    }

    void start(@Observes StartupEvent event) {
        if (!config.enabled()) {
            return;
        }
        StatScraper scraper = new StatScraper(new StatScraper.Limits(config.queueProxyPort(), config.scrapeTimeout(),
                config.scrapeMaxBytes(), config.maxPodRps()), io, metrics);
        ActivatorStats reports = activators.stats();
        reconciler = new PaReconciler(client, config, scraper, clock, metrics, new PaWriter(client),
                (namespace, revision, now) -> reports.reading(new RevisionKey(namespace, revision), now)
                        .map(r -> new PaReconciler.ActivatorLoad.Load(r.requestsPerSecond(), r.concurrency()))
                        .orElse(PaReconciler.ActivatorLoad.Load.NONE),
                new ConfigMapHistoryStore(client, config.leaseNamespace()));
        reconciler.start();
        // Knative's activator reports to the autoscaler that replaced Knative's: only then are its reports taken, and
        // only from the address of a running activator pod unless authentication is off.
        if (config.mode() == AutoscalerConfig.Mode.REPLACE) {
            if (activatorConfig.authentication() == ActivatorConfig.Authentication.NONE) {
                LOG.warn("dilu.autoscaler.activator.authentication=none: stats are taken from anyone who reaches the port");
                activators.senders(address -> Optional.of(ActivatorSender.unchecked()));
            } else {
                activatorPods = new ActivatorPods(client, config.knativeNamespace(), activatorConfig.podLabel());
                activatorPods.start();
                activators.senders(activatorPods::at);
            }
        }
        activators.accept(k -> reconciler.knows(k.namespace(), k.name()));
        activators.accepting(() -> leading && config.mode() == AutoscalerConfig.Mode.REPLACE);
        activators.onActivity(this::poke);
        if (config.profiler().enabled()) {
            profiler = new Profiler(client, config.profiler(), clock);
            profiler.start();
        }
        String identity = System.getenv().getOrDefault("HOSTNAME", "dilu-autoscaler") + "-" + UUID.randomUUID();
        LeaderElector elector = client.leaderElector().withConfig(new LeaderElectionConfigBuilder()
                .withName(config.leaseName())
                .withLock(new LeaseLock(config.leaseNamespace(), config.leaseName(), identity))
                .withLeaseDuration(Duration.ofSeconds(15)).withRenewDeadline(Duration.ofSeconds(10))
                .withRetryPeriod(Duration.ofSeconds(2))
                .withReleaseOnCancel(true)
                .withLeaderCallbacks(new LeaderCallbacks(this::lead, this::follow, leader -> LOG.infof("leader: %s", leader)))
                .build()).build();
        election = elector.start();
    }

    private void lead() {
        LOG.infof("leading: reconciling PodAutoscalers of class %s%s", config.paClass(),
                config.mode() == AutoscalerConfig.Mode.REPLACE ? " and Knative's, in place of Knative's autoscaler" : "");
        leading = true;
        progress.leading();
        long period = config.tick().toMillis();
        ticking = ticker.scheduleAtFixedRate(this::tick, 0, period, TimeUnit.MILLISECONDS);
        if (profiler != null) {
            profiler.lead();
        }
    }

    private void follow() {
        leading = false;
        progress.following();
        if (ticking != null) {
            ticking.cancel(false);
        }
        if (profiler != null) {
            profiler.follow();
        }
        LOG.info("no longer leading");
    }

    private void tick() {
        try {
            reconciler.tick();
        } catch (RuntimeException e) {
            LOG.errorf(e, "autoscaling tick failed; the next tick retries");
        }
        // Not reached by a tick that is stuck, nor after an Error, which also ends the schedule: liveness sees both.
        progress.ticked();
    }

    /**
     * An activator reported requests for a revision: decide it now on the tick's thread, so that a revision at zero
     * wakes without waiting for the tick. Called on the websocket's I/O thread: it only queues, once per revision.
     */
    private void poke(RevisionKey revision) {
        if (leading && pokes.add(revision)) {
            ticker.execute(() -> {
                pokes.remove(revision);
                try {
                    reconciler.poke(revision.namespace(), revision.name());
                } catch (RuntimeException e) {
                    LOG.errorf(e, "deciding %s on an activator report failed; the next tick retries", revision);
                }
            });
        }
    }

    /** Whether this replica is the one scaling. */
    public boolean leading() {
        return leading;
    }

    void stop(@Observes ShutdownEvent event) {
        if (election != null) {
            election.cancel(true);
        }
        ticker.shutdownNow();
        io.shutdownNow();
        if (reconciler != null) {
            reconciler.close();
        }
        if (profiler != null) {
            profiler.close();
        }
        if (activatorPods != null) {
            activatorPods.close();
        }
    }
}
