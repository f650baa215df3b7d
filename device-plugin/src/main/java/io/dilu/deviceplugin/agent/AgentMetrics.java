package io.dilu.deviceplugin.agent;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.tokens.ControllerState;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.gpu.EmulatedInventory;
import io.dilu.deviceplugin.gpu.GpuInventory;
import io.dilu.deviceplugin.tokens.ReportReading;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;

/**
 * The node agent's metrics ({@code /q/metrics}), named as Prometheus asks: ratios 0–1 in {@code _ratio}, counters
 * in {@code _total}, units in the name, states as a label. The list, with each name as exported, is in
 * docs/node-agent.md; {@code NodeAgentTest} holds that table to a real scrape.
 *
 * <p>Per-container series are labelled by the container (namespace, pod, container) and its GPU, never by the
 * allocation's id, which changes with every allocation: a share is exported once its container is known, and
 * while the kubelet lists it. {@link #refresh} (every second) follows the shares as they come and go.
 */
final class AgentMetrics {

    /** The labels of a per-container series. */
    private record Row(String namespace, String pod, String container, String gpu) {

        Tags tags() {
            return Tags.of("namespace", namespace, "pod", pod, "container", container, "gpu", gpu);
        }
    }

    /** The meters of one row, and the allocation they read. */
    private record Exported(String allocation, List<Meter> meters) {}

    private final MeterRegistry registry;
    private final List<GpuDevice> gpus;
    private final TokenManager tokens;
    private final Allocations allocations;
    private final LongSupplier registrations;
    private final Map<Row, Exported> rows = new HashMap<>();
    private final long[] lastLaunched;
    private final double[] capacityPerSecond;
    private volatile double[] estimatedBusy;

    /**
     * Registers the node's and each GPU's series.
     *
     * @param registrations times the device plugin registered with the kubelet
     * @param period the token period, for the busy share estimated from blocks launched
     */
    AgentMetrics(MeterRegistry registry, List<GpuDevice> gpus, GpuInventory inventory, TokenManager tokens,
            Allocations allocations, LongSupplier registrations, Duration period) {
        this.registry = registry;
        this.gpus = List.copyOf(gpus);
        this.tokens = tokens;
        this.allocations = allocations;
        this.registrations = registrations;
        this.lastLaunched = new long[gpus.size()];
        this.capacityPerSecond = new double[gpus.size()];
        this.estimatedBusy = new double[gpus.size()];
        for (int g = 0; g < gpus.size(); g++) {
            capacityPerSecond[g] = tokens.gpu(g).parameters().maxTokens() * (1e9 / period.toNanos());
            gpu(g, gpus.get(g), inventory);
        }
        Gauge.builder("dilu_allocations", allocations, a -> a.all().size())
                .description("GPU shares handed out on this node").register(registry);
        // Meters hold what they read weakly: read through this object, which the agent keeps.
        FunctionCounter.builder("dilu_kubelet_registrations_total", this, m -> m.registrations.getAsLong())
                .description("times the device plugin registered with the kubelet (again after each kubelet restart)")
                .register(registry);
        for (ReportReading.Fault fault : ReportReading.Fault.values()) {
            FunctionCounter.builder("dilu_report_faults_total", tokens, t -> sumOverGpus(g -> t.gpu(g).faults(fault)))
                    .tag("fault", fault.name().toLowerCase(Locale.ROOT).replace('_', '-'))
                    .description("values in tenants' report pages no hook could have written, ignored")
                    .register(registry);
        }
        PodIdentity.counters(registry);
    }

    private void gpu(int index, GpuDevice gpu, GpuInventory inventory) {
        Gauge.builder("dilu_gpu_sm_request_ratio", this, m -> m.booked(gpu, Allocation::smRequest))
                .tag("gpu", gpu.uuid()).description("Σ SM request of the booked shares on the GPU (parked ones left out), as "
                        + "a share of the GPU").register(registry);
        Gauge.builder("dilu_gpu_sm_limit_ratio", this, m -> m.booked(gpu, Allocation::smLimit))
                .tag("gpu", gpu.uuid()).description("Σ SM limit of the booked shares on the GPU (parked ones left out), as a "
                        + "share of the GPU (up to γ)").register(registry);
        Gauge.builder("dilu_gpu_parked_shares", this, m -> m.parkedOn(gpu))
                .tag("gpu", gpu.uuid()).description("shares on the GPU whose pods are parked: their memory held, their SMs "
                        + "not booked").register(registry);
        boolean nvml = inventory.utilisation(gpu.uuid()).isPresent();
        // Without NVML the busy share is estimated from the thread blocks the hooks report against MaxTokens:
        // on emulated GPUs that is the only utilization there is, and it is labelled so.
        ToDoubleFunction<AgentMetrics> busy = nvml
                ? m -> inventory.utilisation(gpu.uuid()).orElse(Double.NaN) : m -> m.estimatedBusy[index];
        Gauge.builder("dilu_gpu_utilization_ratio", this, busy).tag("gpu", gpu.uuid())
                .tag("source", nvml ? "nvml" : inventory instanceof EmulatedInventory ? "emulated" : "tokens")
                .description("share of the GPU's time busy (NVML), or of its thread-block capacity used")
                .register(registry);
        FunctionCounter.builder("dilu_gpu_emergencies_total", tokens, t -> t.gpu(index).emergencies())
                .tag("gpu", gpu.uuid())
                .description("times the GPU's token controller entered EMERGENCY (an SLO container's kernel launch "
                        + "cycle stretched past its threshold)")
                .register(registry);
    }

    /** Every second: the per-container rows follow the shares, and the busy estimate moves on. */
    synchronized void refresh() {
        Map<String, Tenant> tenants = allocations.tenants();
        Map<Row, Allocation> wanted = new HashMap<>();
        for (Allocation a : allocations.all().values()) {
            // A share whose container is not known, or that the kubelet no longer lists, has no stable labels.
            if (a.owner().isEmpty() || a.missingSince().isPresent() || !tenants.containsKey(a.id())) {
                continue;
            }
            ContainerRef o = a.owner().get();
            // Two live shares of one container on one GPU happen only for a moment (a pod re-created under its
            // name): the newer one is the container's.
            wanted.merge(new Row(o.namespace(), o.pod(), o.container(), a.gpu()), a,
                    (x, y) -> Comparator.comparing(Allocation::created).compare(x, y) >= 0 ? x : y);
        }
        for (var it = rows.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            Allocation now = wanted.get(e.getKey());
            if (now == null || !now.id().equals(e.getValue().allocation())) {
                e.getValue().meters().forEach(registry::remove);
                it.remove();
            }
        }
        wanted.forEach((row, a) -> rows.computeIfAbsent(row, r -> export(r, a.id(), tenants.get(a.id()))));
        double[] busy = new double[gpus.size()];
        for (int g = 0; g < gpus.size(); g++) {
            long launched = tokens.gpu(g).blocksLaunched();
            busy[g] = Math.min(1.0, (launched - lastLaunched[g]) / capacityPerSecond[g]);
            lastLaunched[g] = launched;
        }
        estimatedBusy = busy;
    }

    /**
     * The series of one container, read from its control block at each scrape (its first device: the GPU of
     * the row). The report page is the tenant's: its counters are exported as the hook wrote them, but never
     * below zero; a tenant that makes its own counters run backwards only makes its own rate look like a reset.
     */
    private Exported export(Row row, String allocation, Tenant tenant) {
        ControlBlock b = tenant.block();
        int d = tenant.device();
        Tags tags = row.tags();
        List<Meter> meters = new ArrayList<>();
        meters.add(counter("dilu_container_tokens_granted_total", b, x -> Math.max(x.tokensGranted(d), x.pacedUntil(d)),
                tags, "thread blocks the container was granted"));
        meters.add(counter("dilu_container_blocks_launched_total", b, x -> x.blocksLaunched(d), tags,
                "thread blocks the container launched, as its hook reports"));
        meters.add(counter("dilu_container_klc_total", b, x -> x.klcCount(d), tags,
                "kernel launch cycles the container completed, as its hook reports"));
        meters.add(counter("dilu_container_memory_refusals_total", b, x -> x.memoryRefusals(d), tags,
                "GPU memory allocations the hook refused for not fitting the container's share"));
        meters.add(Gauge.builder("dilu_container_klc_seconds", b,
                        x -> x.klcCount(d) <= 0 ? 0 : x.klcNanos(d, x.klcCount(d)) / 1e9)
                .tags(tags).description("the container's latest kernel launch cycle").strongReference(true)
                .register(registry));
        meters.add(Gauge.builder("dilu_container_parked", allocations, x -> x.parked(allocation) ? 1 : 0).tags(tags)
                .description("1 while the container's pod is parked (nothing guaranteed, it runs on what its GPU's booked "
                        + "containers leave), 0 while it is booked").strongReference(true).register(registry));
        for (ControllerState s : ControllerState.values()) {
            meters.add(Gauge.builder("dilu_container_controller_state", b, x -> x.state(d) == s.ordinal() ? 1 : 0)
                    .tags(tags).tag("state", s.name().toLowerCase(Locale.ROOT))
                    .description("the GPU's token controller state as the container is told it: 1 for the current "
                            + "state, 0 for the others")
                    .strongReference(true).register(registry));
        }
        return new Exported(allocation, meters);
    }

    private FunctionCounter counter(String name, ControlBlock block, java.util.function.ToLongFunction<ControlBlock> read,
            Tags tags, String description) {
        return FunctionCounter.builder(name, block, b -> Math.max(0, read.applyAsLong(b))).tags(tags)
                .description(description).register(registry);
    }

    private double booked(GpuDevice gpu, ToIntFunction<Allocation> percent) {
        return allocations.all().values().stream().filter(a -> a.gpu().equals(gpu.uuid()) && !allocations.parked(a.id()))
                .mapToInt(percent).sum() / 100.0;
    }

    private double parkedOn(GpuDevice gpu) {
        return allocations.all().values().stream().filter(a -> a.gpu().equals(gpu.uuid()) && allocations.parked(a.id())).count();
    }

    private long sumOverGpus(java.util.function.IntToLongFunction perGpu) {
        long n = 0;
        for (int g = 0; g < gpus.size(); g++) {
            n += perGpu.applyAsLong(g);
        }
        return n;
    }
}
