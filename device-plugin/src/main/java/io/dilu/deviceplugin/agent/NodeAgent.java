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
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
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
        TokenParameters params = new TokenParameters(config.maxTokens(), config.etaViolation(),
                TokenParameters.DEFAULTS.etaIncrease(), config.period(), TokenParameters.DEFAULTS.rateWindow(),
                TokenParameters.DEFAULTS.floor(), TokenParameters.DEFAULTS.klcMemory());
        tokens = new TokenManager(gpus.size(), params, InstantSource.system(), 4096);
        allocations = new Allocations(config, gpus, tokens);
        int recovered = allocations.recover();
        GpuSmDevicePlugin plugin = new GpuSmDevicePlugin(gpus, allocations);
        endpoint = new DevicePluginEndpoint(config.devicePluginsDir(), config.endpoint(), plugin);
        endpoint.start();
        tokens.start();
        registerMetrics();
        long health = config.healthInterval().toMillis();
        refresher.scheduleWithFixedDelay(() -> gpus.forEach(g -> plugin.setHealthy(g.uuid(), inventory.healthy(g.uuid()))),
                health, health, TimeUnit.MILLISECONDS);
        if (config.publishInventory()) {
            publishUntilDone(new InventoryPublisher(kubernetes, config.nodeName()));
        }
        LOG.infof("node agent up: %d GPU(s), %d allocation(s) recovered", gpus.size(), recovered);
    }

    /** The Node may not exist yet, or the API server may be away: try again every 30 s until it works. */
    private void publishUntilDone(InventoryPublisher publisher) {
        refresher.execute(() -> {
            if (!publisher.publish(gpus)) {
                refresher.schedule(() -> publishUntilDone(publisher), 30, TimeUnit.SECONDS);
            }
        });
    }

    private void registerMetrics() {
        for (GpuDevice gpu : gpus) {
            Gauge.builder("dilu_gpu_sm_request_percent", this, a -> a.sum(gpu, Tenant::request))
                    .tag("gpu", gpu.uuid()).description("Σ SM request of the containers on the GPU").register(metrics);
            Gauge.builder("dilu_gpu_sm_limit_percent", this, a -> a.sum(gpu, Tenant::limit))
                    .tag("gpu", gpu.uuid()).description("Σ SM limit of the containers on the GPU").register(metrics);
        }
        Gauge.builder("dilu_allocations", this, a -> a.allocations.all().size())
                .description("GPU shares handed out on this node").register(metrics);
        List<MultiGauge> perContainer = List.of(
                containerGauge("dilu_container_tokens_granted", "cumulative thread blocks granted", b -> b.tokensGranted(0)),
                containerGauge("dilu_container_blocks_launched", "cumulative thread blocks launched", b -> b.blocksLaunched(0)),
                containerGauge("dilu_container_klc_count", "kernel launch cycles recorded", b -> b.klcCount(0)),
                containerGauge("dilu_container_controller_state", "0 NONE, 1 EMERGENCY, 2 RECOVERY, 3 CONTENTION", b -> b.state(0)));
        MultiGauge klc = MultiGauge.builder("dilu_container_klc_seconds").description("latest kernel launch cycle")
                .register(metrics);
        // The set of containers changes with allocations: refresh the rows every second.
        refresher.scheduleAtFixedRate(() -> {
            var tenants = allocations.all().values();
            for (int i = 0; i < perContainer.size(); i++) {
                ToLongFunction<ControlBlock> value = readers.get(i);
                perContainer.get(i).register(tenants.stream().map(t -> MultiGauge.Row.of(tags(t),
                        value.applyAsLong(t.block()))).toList(), true);
            }
            klc.register(tenants.stream().map(t -> MultiGauge.Row.of(tags(t), t.block().klcCount(0) == 0 ? 0
                    : t.block().klcNanos(0, t.block().klcCount(0)) / 1e9)).toList(), true);
        }, 0, 1, TimeUnit.SECONDS);
    }

    private MultiGauge containerGauge(String name, String description,
            ToLongFunction<ControlBlock> reader) {
        readers.add(reader);
        return MultiGauge.builder(name).description(description).register(metrics);
    }

    private static Tags tags(Tenant t) {
        String dir = t.block().directory().getFileName().toString();
        return Tags.of("allocation", t.id(), "gpu", dir.substring(0, dir.indexOf('_')));
    }

    private double sum(GpuDevice gpu, ToDoubleFunction<Tenant> share) {
        // Allocation ids carry no GPU; the tenants of this GPU are those on its token loop.
        return allocations.all().values().stream()
                .filter(t -> t.block().directory().getFileName().toString().startsWith(gpu.uuid() + "_"))
                .mapToDouble(share).sum() * 100;
    }

    void stop(@Observes ShutdownEvent event) throws Exception {
        refresher.shutdownNow();
        if (endpoint != null) {
            endpoint.close();
        }
        if (tokens != null) {
            tokens.close();
        }
    }

    /** The GPUs the agent serves (empty when disabled). */
    public List<GpuDevice> gpus() {
        return gpus;
    }

    public Allocations allocations() {
        return allocations;
    }
}
