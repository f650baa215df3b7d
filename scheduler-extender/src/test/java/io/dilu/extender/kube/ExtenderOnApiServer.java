package io.dilu.extender.kube;

import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.ExtenderConfig;
import io.dilu.extender.ExtenderResource;
import io.dilu.extender.Refusals;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.RealApiServer;
import io.dilu.testing.ShippedConfig;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;

/**
 * The extender's parts on a real kube-apiserver, wired by hand as the application wires them, from its configuration
 * as shipped: the book, the parking writer and the cluster watcher, synced. Each test builds its extender over them on
 * a clock of its own ({@link #extender}), its events written on the calling thread, so that each assertion sees what the
 * request before it caused.
 */
final class ExtenderOnApiServer implements AutoCloseable {

    final RealApiServer api;
    final KubernetesClient client;
    final ExtenderConfig config;
    final PlacementBook book;
    final SimpleMeterRegistry parkingMetrics = new SimpleMeterRegistry();
    final ParkingWriter parking;
    final ClusterWatcher watcher;

    /** The API server with {@code namespaces}, and {@code nodes} (name → its GPUs) there before the watcher syncs. */
    ExtenderOnApiServer(List<String> namespaces, Map<String, List<GpuDevice>> nodes) {
        api = RealApiServer.start();
        client = api.client();
        // Quarkus' reading of durations ("5s").
        config = ShippedConfig.defaults(ExtenderConfig.class).getConfigMapping(ExtenderConfig.class);
        book = new PlacementBook(config.placement(), config.defaultMemoryMib(), config.reservationTtl());
        parking = new ParkingWriter(client, InstantSource.system(), events(InstantSource.system(), parkingMetrics),
                parkingMetrics);
        watcher = new ClusterWatcher(client, book, parking);
        try {
            namespaces.forEach(ns -> api.createNamespace(ns, Map.of()));
            nodes.forEach(this::addNode);
            watcher.start(null);
            await().atMost(Duration.ofSeconds(30)).until(watcher::synced);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** A node whose inventory annotation lists {@code gpus}, as the node agent writes it. */
    void addNode(String name, List<GpuDevice> gpus) {
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName(name)
                .withAnnotations(Map.of(DiluNames.GPU_INVENTORY, InventoryAnnotation.write(gpus))).endMetadata().build())
                .create();
    }

    /** Events as the extender writes them, at most once a minute per pod and reason, on the calling thread. */
    ExtenderEvents events(InstantSource clock, SimpleMeterRegistry metrics) {
        return new ExtenderEvents(ExtenderEvents.recorder(client, Duration.ofMinutes(1), 300, clock, Runnable::run, metrics));
    }

    /** The extender's endpoints over the shared book and watcher, on {@code clock}, telling pods through {@code events}. */
    ExtenderResource extender(InstantSource clock, SimpleMeterRegistry metrics, ExtenderEvents events) {
        return new ExtenderResource(book, watcher, new Binder(client, config), clock, new Refusals(metrics), metrics, events,
                parking);
    }

    @Override
    public void close() {
        watcher.stop(null);
        api.close();
    }
}
