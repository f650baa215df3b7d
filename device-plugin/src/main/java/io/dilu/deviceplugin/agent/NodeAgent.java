package io.dilu.deviceplugin.agent;

import io.dilu.kube.events.EventCounts;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.backstop.EmulatedProcesses;
import io.dilu.deviceplugin.backstop.GpuProcesses;
import io.dilu.deviceplugin.backstop.NvmlProcesses;
import io.dilu.deviceplugin.backstop.ProcFs;
import io.dilu.deviceplugin.backstop.ProcessKiller;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.gpu.GpuInventory;
import io.dilu.deviceplugin.gpu.InventoryPublisher;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import io.dilu.deviceplugin.gpu.ToolkitConfig;
import io.dilu.deviceplugin.kubelet.DevicePluginEndpoint;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.PodResourcesClient;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.kube.events.EventThrottle;
import io.dilu.kube.events.PodEventRecorder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/** Starts the node agent with the application: GPU discovery, the kubelet device plugin and the token manager. */
@ApplicationScoped
public class NodeAgent {

    private static final Logger LOG = Logger.getLogger(NodeAgent.class);

    private final NodeAgentConfig config;
    private final MeterRegistry metrics;
    private final KubernetesClient kubernetes;
    private TokenManager tokens;
    private DevicePluginEndpoint endpoint;
    private Allocations allocations;
    private PodIdentity identity;
    private AgentMetrics agentMetrics;
    private NodeEvents events;
    private PodResourcesClient kubelet;
    private List<GpuDevice> gpus = List.of();
    private final ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-metrics").unstarted(r));
    private Backstop backstop;
    private ToolkitGate toolkit;
    /** The toolkit's checks write the Node: an API server slow to answer holds neither metrics nor events. */
    private final ScheduledExecutorService toolkitThread = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-toolkit").unstarted(r));
    private final ScheduledExecutorService backstopThread = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-backstop").unstarted(r));
    private final ExecutorService eventWriter = Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-events").unstarted(r));

    public NodeAgent(NodeAgentConfig config, MeterRegistry metrics, KubernetesClient kubernetes) {
        this.config = config;
        this.metrics = metrics;
        this.kubernetes = kubernetes;
    }

    void start(@Observes StartupEvent event) throws IOException {
        if (!config.enabled()) {
            LOG.info("node agent disabled (dilu.agent.enabled=false)");
            return;
        }
        GpuInventory inventory = config.emulatedGpus()
                .<GpuInventory>map(spec -> EmulatedInventory.parse(config.nodeName(), spec))
                .or(() -> NvmlInventory.load().map(GpuInventory.class::cast))
                .orElseThrow(() -> new IllegalStateException(
                        "no GPUs: NVML is not available and dilu.agent.emulated-gpus is not set"));
        gpus = inventory.gpus();
        tokens = new TokenManager(tokenParameters(config, gpus), config.refillSteps(), InstantSource.system(), 4096);
        if (config.matchPods()) {
            kubelet = new PodResourcesClient(config.podResourcesSocket(), Duration.ofSeconds(2));
            identity = new PodIdentity(kubernetes, config.nodeName(), kubelet, InstantSource.system(),
                    config.releaseGrace(), metrics);
            identity.start();
        }
        GpuSmDevicePlugin.DeviceListStrategy deviceList = GpuSmDevicePlugin.DeviceListStrategy.parse(config.deviceListStrategy());
        toolkit = toolkitGate(inventory, deviceList);
        allocations = new Allocations(Allocations.Paths.of(config), deviceList, gpus, tokens,
                InstantSource.system(), identity != null ? identity : List::of);
        int recovered = allocations.recover();
        if (identity != null) {
            identity.watchParking(allocations::setParked);
            Duration every = config.reconcileInterval();
            every(refresher, every, every, "matching shares to pods", () -> identity.reconcile(allocations));
        }
        GpuSmDevicePlugin plugin = new GpuSmDevicePlugin(gpus, allocations);
        endpoint = new DevicePluginEndpoint(config.devicePluginsDir(), config.endpoint(), plugin, toolkit::mayServe);
        endpoint.start();
        every(toolkitThread, Duration.ZERO, config.toolkitCheckInterval(), "checking the NVIDIA toolkit's settings",
                toolkit::check);
        tokens.start();
        agentMetrics = new AgentMetrics(metrics, gpus, inventory, tokens, allocations,
                () -> endpoint.registrations(), config.tokens().period());
        PodEventRecorder recorder = eventRecorder();
        events = new NodeEvents(gpus.size(), tokens, allocations, identity != null ? identity : List::of, recorder);
        refresher.scheduleAtFixedRate(this::everySecond, 0, 1, TimeUnit.SECONDS);
        startBackstop(inventory, recorder);
        refresher.scheduleWithFixedDelay(recorder::flush, 5, 5, TimeUnit.SECONDS);
        long health = config.healthInterval().toMillis();
        refresher.scheduleWithFixedDelay(() -> gpus.forEach(g -> plugin.setHealthy(g.uuid(), inventory.healthy(g.uuid()))),
                health, health, TimeUnit.MILLISECONDS);
        if (config.publishInventory()) {
            publishUntilDone(new InventoryPublisher(kubernetes, config.nodeName()));
        }
        LOG.infof("node agent up: %d GPU(s), %d allocation(s) recovered", gpus.size(), recovered);
    }

    /**
     * The gate over the NVIDIA container toolkit's variable route ({@link ToolkitGate}), judged once before the
     * device plugin first serves; {@code dilu_toolkit_envvar_route_open} follows it (1 open, 0 closed).
     */
    private ToolkitGate toolkitGate(GpuInventory inventory, GpuSmDevicePlugin.DeviceListStrategy deviceList) {
        boolean nvidia = !(inventory instanceof EmulatedInventory);
        ToolkitGate gate = new ToolkitGate(() -> ToolkitConfig.judge(config.toolkitConfig(), nvidia),
                new KubeNode(kubernetes, config.nodeName(), InstantSource.system()), !config.allowOpenToolkit());
        ToolkitConfig.Verdict first = gate.judge();
        if (!first.open() && first.settings().isPresent() && !first.settings().get().acceptVolumeMounts()
                && deviceList != GpuSmDevicePlugin.DeviceListStrategy.ENVVAR) {
            LOG.errorf("the NVIDIA container toolkit of this node reads no device list from volume mounts "
                    + "(accept-nvidia-visible-devices-as-volume-mounts) while Allocate names GPUs that way "
                    + "(dilu.agent.device-list-strategy=%s): containers with a share will get no GPU", config.deviceListStrategy());
        }
        io.micrometer.core.instrument.Gauge.builder("dilu_toolkit_envvar_route_open", gate, ToolkitGate::openGauge)
                .description("1 when the NVIDIA container toolkit gives unprivileged containers the GPUs their "
                        + "NVIDIA_VISIBLE_DEVICES names (the node is then tainted and serves no share), 0 when it does not")
                .register(metrics);
        return gate;
    }

    /**
     * The backstop, on a thread of its own (reading /proc and the GPUs takes longer than the metrics' second may
     * spare): what the GPUs say each process uses, against each container's share.
     */
    private void startBackstop(GpuInventory inventory, PodEventRecorder recorder) {
        NodeAgentConfig.BackstopConfig b = config.backstop();
        if (!b.enabled()) {
            LOG.warn("the backstop is off (dilu.agent.backstop.enabled=false): use beyond a share that bypasses the hook "
                    + "goes unnoticed");
            return;
        }
        ProcFs proc = ProcFs.of(b.procRoot());
        GpuProcesses source;
        if (inventory instanceof NvmlInventory nvml) {
            source = new NvmlProcesses(nvml);
        } else {
            double[] perSecond = new double[gpus.size()];
            for (int g = 0; g < gpus.size(); g++) {
                TokenParameters loop = tokens.gpu(g).parameters();
                perSecond[g] = loop.maxTokens() * (1e9 / loop.period().toNanos());
            }
            source = new EmulatedProcesses(gpus, config.emulatorHostDir(), proc, perSecond);
        }
        backstop = new Backstop(source, gpus, proc, new ProcessKiller(proc), allocations,
                identity != null ? identity : List::of, recorder, InstantSource.system(),
                new Backstop.Settings(b.bounds(), b.killMemoryExcess(), b.killComputeAfterRounds()), metrics);
        every(backstopThread, b.interval(), b.interval(), "the backstop's round", backstop::round);
        Duration memoryEvery = b.memoryInterval();
        if (memoryEvery.isPositive() && memoryEvery.compareTo(b.interval()) < 0) {
            every(backstopThread, memoryEvery, memoryEvery, "the backstop's memory sweep", backstop::sweep);
        }
    }

    /**
     * {@code task} on {@code thread} after {@code first}, then {@code period} after each run ends; a run that throws is
     * logged and the next one tries again (an executor would otherwise stop the task for good).
     */
    private static void every(ScheduledExecutorService thread, Duration first, Duration period, String what, Runnable task) {
        thread.scheduleWithFixedDelay(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.errorf(e, "%s failed; the next run retries", what);
            }
        }, first.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Algorithm 2's knobs for each GPU: MaxTokens from the GPU's own SM count, the rest from the configuration. */
    public static List<TokenParameters> tokenParameters(NodeAgentConfig config, List<GpuDevice> gpus) {
        TokenParameters node = config.tokens();
        Duration block = Duration.ofNanos(config.blockMicros() * 1000L);
        return gpus.stream().map(g -> node.withMaxTokens(TokenParameters.maxTokensFor(g.smCount(), node.period(), block)))
                .toList();
    }

    /** The Node may not exist yet, or the API server may be away: try again every 30 s until it works. */
    private void publishUntilDone(InventoryPublisher publisher) {
        refresher.execute(() -> {
            if (!publisher.publish(gpus)) {
                refresher.schedule(() -> publishUntilDone(publisher), 30, TimeUnit.SECONDS);
            }
        });
    }

    /**
     * Events go out on a thread of their own, so that neither the sweep nor the token loops wait for the API
     * server; the throttle keeps what a tenant can make the node say to a few a minute.
     */
    private PodEventRecorder eventRecorder() {
        return new PodEventRecorder(new PodEventRecorder.Source("dilu-node-agent", config.nodeName(), config.nodeName()),
                new EventThrottle(config.eventWindow(), config.eventsPerWindow(), 1024), InstantSource.system(),
                e -> kubernetes.v1().events().inNamespace(e.getMetadata().getNamespace()).resource(e).create(),
                eventWriter, new EventCounts(metrics, List.of(NodeEvents.THROTTLE_EMERGENCY, NodeEvents.MEMORY_REFUSED,
                        Backstop.SHARE_EXCEEDED, Backstop.GPU_WITHOUT_SHARE)));
    }

    /** Every second: metrics rows follow the shares, and what happened is told to the pods. */
    private void everySecond() {
        try {
            agentMetrics.refresh();
            events.sweep();
        } catch (RuntimeException e) {
            // A scheduled task that throws is never run again: log, and let the next second try.
            LOG.errorf(e, "refreshing metrics or events failed; the next second retries");
        }
    }

    void stop(@Observes ShutdownEvent event) throws Exception {
        refresher.shutdownNow();
        backstopThread.shutdownNow();
        toolkitThread.shutdownNow();
        // Events already let through are written before the agent goes (a couple of seconds at most).
        eventWriter.shutdown();
        eventWriter.awaitTermination(2, TimeUnit.SECONDS);
        if (endpoint != null) {
            endpoint.close();
        }
        if (identity != null) {
            identity.close();
        }
        if (kubelet != null) {
            kubelet.close();
        }
        if (tokens != null) {
            tokens.close();
        }
    }

    /**
     * Whether the agent is off, or serving: registered with the kubelet at least once, and not withdrawn since
     * (a node whose toolkit hands out GPUs by NVIDIA_VISIBLE_DEVICES, {@link ToolkitGate}).
     */
    public boolean ready() {
        return !config.enabled() || (endpoint != null && endpoint.registrations() > 0 && endpoint.serving());
    }

    /**
     * Whether every GPU's token loop is running and completed a period within the last second: a loop that is
     * alive but stuck, or failing every period, leaves its containers on the hook's own refills, then waiting.
     */
    public boolean tokenLoopsAlive() {
        if (tokens == null) {
            return true;
        }
        long now = System.nanoTime();
        for (int g = 0; g < gpus.size(); g++) {
            if (now - tokens.gpu(g).lastTickNanos() > TimeUnit.SECONDS.toNanos(1)) {
                return false;
            }
        }
        return tokens.threads().stream().allMatch(Thread::isAlive);
    }

    /** The GPUs the agent serves (empty when disabled). */
    public List<GpuDevice> gpus() {
        return gpus;
    }

    public Allocations allocations() {
        return allocations;
    }
}
