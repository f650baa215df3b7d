package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.gpu.GpuInventory;
import io.dilu.deviceplugin.gpu.InventoryPublisher;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import io.dilu.deviceplugin.kubelet.DevicePluginEndpoint;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.kubelet.PodResourcesClient;
import io.dilu.deviceplugin.tokens.ReportReading;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.Map;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;
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
    private volatile double[] estimatedBusy = new double[0];
    private PodResourcesClient kubelet;
    private List<GpuDevice> gpus = List.of();
    private final List<ToLongFunction<ControlBlock>> readers = new ArrayList<>();
    private final ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-metrics").unstarted(r));

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
        allocations = new Allocations(Allocations.Paths.of(config), gpus, tokens, InstantSource.system(),
                identity != null ? identity : List::of);
        int recovered = allocations.recover();
        if (identity != null) {
            long every = config.reconcileInterval().toMillis();
            refresher.scheduleWithFixedDelay(this::reconcile, every, every, TimeUnit.MILLISECONDS);
        }
        GpuSmDevicePlugin plugin = new GpuSmDevicePlugin(gpus, allocations);
        endpoint = new DevicePluginEndpoint(config.devicePluginsDir(), config.endpoint(), plugin);
        endpoint.start();
        tokens.start();
        estimatedBusy = new double[gpus.size()];
        registerMetrics(inventory);
        long health = config.healthInterval().toMillis();
        refresher.scheduleWithFixedDelay(() -> gpus.forEach(g -> plugin.setHealthy(g.uuid(), inventory.healthy(g.uuid()))),
                health, health, TimeUnit.MILLISECONDS);
        if (config.publishInventory()) {
            publishUntilDone(new InventoryPublisher(kubernetes, config.nodeName()));
        }
        LOG.infof("node agent up: %d GPU(s), %d allocation(s) recovered", gpus.size(), recovered);
    }

    /** Algorithm 2's knobs for each GPU: MaxTokens from the GPU's own SM count, the rest from the configuration. */
    public static List<TokenParameters> tokenParameters(NodeAgentConfig config, List<GpuDevice> gpus) {
        return gpus.stream().map(g -> new TokenParameters(
                TokenParameters.maxTokensFor(g.smCount(), config.period(), Duration.ofNanos(config.blockMicros() * 1000L)), config.etaViolation(),
                TokenParameters.DEFAULTS.etaIncrease(), config.period(), TokenParameters.DEFAULTS.rateWindow(),
                TokenParameters.DEFAULTS.floor(), TokenParameters.DEFAULTS.klcMemory())).toList();
    }

    private void reconcile() {
        try {
            identity.reconcile(allocations);
        } catch (RuntimeException e) {
            LOG.errorf(e, "matching shares to pods failed; the next round retries");
        }
    }

    /** The Node may not exist yet, or the API server may be away: try again every 30 s until it works. */
    private void publishUntilDone(InventoryPublisher publisher) {
        refresher.execute(() -> {
            if (!publisher.publish(gpus)) {
                refresher.schedule(() -> publishUntilDone(publisher), 30, TimeUnit.SECONDS);
            }
        });
    }

    private void registerMetrics(GpuInventory inventory) {
        for (int g = 0; g < gpus.size(); g++) {
            GpuDevice gpu = gpus.get(g);
            Gauge.builder("dilu_gpu_sm_request_percent", this, a -> a.sum(gpu, Allocation::smRequest))
                    .tag("gpu", gpu.uuid()).description("Σ SM request of the containers on the GPU").register(metrics);
            Gauge.builder("dilu_gpu_sm_limit_percent", this, a -> a.sum(gpu, Allocation::smLimit))
                    .tag("gpu", gpu.uuid()).description("Σ SM limit of the containers on the GPU").register(metrics);
            boolean nvml = inventory.utilisation(gpu.uuid()).isPresent();
            int index = g;
            // Without NVML the busy share is estimated from the thread blocks the hooks report against MaxTokens:
            // on emulated GPUs that is the only utilisation there is, and it is labelled so.
            Gauge.builder("dilu_gpu_utilisation_ratio", this, a -> nvml
                            ? inventory.utilisation(gpu.uuid()).orElse(Double.NaN) : a.estimatedBusy[index])
                    .tag("gpu", gpu.uuid())
                    .tag("source", nvml ? "nvml" : inventory instanceof EmulatedInventory ? "emulated" : "tokens")
                    .description("share of the GPU's time busy (NVML), or of its thread-block capacity used")
                    .register(metrics);
        }
        Gauge.builder("dilu_allocations", this, a -> a.allocations.all().size())
                .description("GPU shares handed out on this node").register(metrics);
        FunctionCounter.builder("dilu_kubelet_registrations_total", this,
                        a -> a.endpoint == null ? 0 : a.endpoint.registrations())
                .description("times the device plugin registered with the kubelet (again after each kubelet restart)")
                .register(metrics);
        List<MultiGauge> perContainer = List.of(
                containerGauge("dilu_container_tokens_granted", "cumulative thread blocks granted by the end of the period",
                        b -> Math.max(b.tokensGranted(0), b.pacedUntil(0))),
                containerGauge("dilu_container_blocks_launched", "cumulative thread blocks launched", b -> b.blocksLaunched(0)),
                containerGauge("dilu_container_klc_count", "kernel launch cycles recorded", b -> b.klcCount(0)),
                containerGauge("dilu_container_controller_state", "0 NONE, 1 EMERGENCY, 2 RECOVERY, 3 CONTENTION", b -> b.state(0)));
        MultiGauge klc = MultiGauge.builder("dilu_container_klc_seconds").description("latest kernel launch cycle")
                .register(metrics);
        long[] lastLaunched = new long[gpus.size()];
        double[] capacityPerSecond = new double[gpus.size()];
        for (int g = 0; g < gpus.size(); g++) {
            capacityPerSecond[g] = tokens.gpu(g).parameters().maxTokens() * (1e9 / config.period().toNanos());
        }
        for (ReportReading.Fault fault : ReportReading.Fault.values()) {
            FunctionCounter.builder("dilu_report_faults_total", this, a -> {
                        long n = 0;
                        for (int g = 0; g < a.gpus.size(); g++) {
                            n += a.tokens.gpu(g).faults(fault);
                        }
                        return n;
                    }).tag("fault", fault.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'))
                    .description("values in tenants' report pages no hook could have written, ignored").register(metrics);
        }
        // The set of containers changes with allocations: refresh the rows every second.
        refresher.scheduleAtFixedRate(() -> {
            Map<String, Allocation> all = allocations.all();
            Map<String, Tenant> tenants = allocations.tenants();
            for (int i = 0; i < perContainer.size(); i++) {
                ToLongFunction<ControlBlock> value = readers.get(i);
                perContainer.get(i).register(all.values().stream().filter(a -> tenants.containsKey(a.id()))
                        .map(a -> MultiGauge.Row.of(tags(a), value.applyAsLong(tenants.get(a.id()).block()))).toList(), true);
            }
            klc.register(all.values().stream().filter(a -> tenants.containsKey(a.id())).map(a -> {
                ControlBlock b = tenants.get(a.id()).block();
                return MultiGauge.Row.of(tags(a), b.klcCount(0) == 0 ? 0 : b.klcNanos(0, b.klcCount(0)) / 1e9);
            }).toList(), true);
            for (int g = 0; g < gpus.size(); g++) {
                long launched = tokens.gpu(g).blocksLaunched();
                estimatedBusy[g] = Math.min(1.0, (launched - lastLaunched[g]) / capacityPerSecond[g]);
                lastLaunched[g] = launched;
            }
        }, 0, 1, TimeUnit.SECONDS);
    }

    private MultiGauge containerGauge(String name, String description,
            ToLongFunction<ControlBlock> reader) {
        readers.add(reader);
        return MultiGauge.builder(name).description(description).register(metrics);
    }

    private static Tags tags(Allocation a) {
        ContainerRef owner = a.owner().orElse(new ContainerRef("", "", ""));
        return Tags.of("allocation", a.id(), "gpu", a.gpu(), "namespace", owner.namespace(), "pod", owner.pod(),
                "container", owner.container());
    }

    private double sum(GpuDevice gpu, ToIntFunction<Allocation> percent) {
        return allocations.all().values().stream().filter(a -> a.gpu().equals(gpu.uuid())).mapToInt(percent).sum();
    }

    void stop(@Observes ShutdownEvent event) throws Exception {
        refresher.shutdownNow();
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

    /** Whether the agent is off, or serving: registered with the kubelet at least once. */
    public boolean ready() {
        return !config.enabled() || (endpoint != null && endpoint.registrations() > 0);
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
