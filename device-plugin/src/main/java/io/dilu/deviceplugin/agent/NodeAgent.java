package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.gpu.GpuInventory;
import io.dilu.deviceplugin.gpu.NvmlInventory;
import io.dilu.deviceplugin.kubelet.DevicePluginEndpoint;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.InstantSource;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.jboss.logging.Logger;

/** Starts the node agent with the application: GPU discovery, the kubelet device plugin and the token manager. */
@ApplicationScoped
public class NodeAgent {

    private static final Logger LOG = Logger.getLogger(NodeAgent.class);

    private final NodeAgentConfig config;
    private final MeterRegistry metrics;
    private TokenManager tokens;
    private DevicePluginEndpoint endpoint;
    private Allocations allocations;
    private List<GpuDevice> gpus = List.of();

    public NodeAgent(NodeAgentConfig config, MeterRegistry metrics) {
        this.config = config;
        this.metrics = metrics;
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
        LOG.infof("node agent up: %d GPU(s), %d allocation(s) recovered", gpus.size(), recovered);
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
    }

    private double sum(GpuDevice gpu, ToDoubleFunction<Tenant> share) {
        // Allocation ids carry no GPU; the tenants of this GPU are those on its token loop.
        return allocations.all().values().stream()
                .filter(t -> t.block().directory().getFileName().toString().startsWith(gpu.uuid() + "_"))
                .mapToDouble(share).sum() * 100;
    }

    void stop(@Observes ShutdownEvent event) throws Exception {
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
