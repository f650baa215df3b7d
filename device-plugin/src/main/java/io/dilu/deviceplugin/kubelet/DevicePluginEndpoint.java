package io.dilu.deviceplugin.kubelet;

import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginOptions;
import io.dilu.deviceplugin.kubelet.v1beta1.RegisterRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.RegistrationGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Serves a device plugin on its socket in the kubelet's device-plugins directory and keeps it registered:
 * when the kubelet restarts it re-creates {@code kubelet.sock} (and removes the plugins' sockets), so on
 * either event the plugin serves again and registers again, without anyone's help.
 */
public final class DevicePluginEndpoint implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(DevicePluginEndpoint.class);
    public static final String KUBELET_SOCKET = "kubelet.sock";

    private final Path dir;
    private final String endpoint;
    private final GpuSmDevicePlugin plugin;
    private final WatchService watcher;
    private final Thread watch;
    private volatile Server server;
    private volatile int registrations;
    /** Retries a registration that failed while the kubelet's socket is there (it may not be listening yet). */
    private final java.util.concurrent.ScheduledExecutorService retries = java.util.concurrent.Executors
            .newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("dilu-kubelet-register").unstarted(r));

    public DevicePluginEndpoint(Path dir, String endpoint, GpuSmDevicePlugin plugin) throws IOException {
        this.dir = dir;
        this.endpoint = endpoint;
        this.plugin = plugin;
        this.watcher = FileSystems.getDefault().newWatchService();
        dir.register(watcher, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_DELETE);
        this.watch = Thread.ofPlatform().daemon().name("dilu-kubelet-watch").unstarted(this::watchKubelet);
    }

    /** Serves and registers; if the kubelet is not up yet, registration happens when its socket appears. */
    public void start() throws IOException {
        serve();
        if (Files.exists(dir.resolve(KUBELET_SOCKET))) {
            register();
        }
        watch.start();
    }

    /** How many times the plugin registered with a kubelet. */
    public int registrations() {
        return registrations;
    }

    private synchronized void serve() throws IOException {
        if (server != null) {
            server.shutdownNow();
        }
        server = UnixSockets.serve(dir.resolve(endpoint), plugin);
        LOG.infof("serving %s on %s", GpuSmDevicePlugin.RESOURCE, dir.resolve(endpoint));
    }

    private synchronized void register() {
        ManagedChannel channel = UnixSockets.connect(dir.resolve(KUBELET_SOCKET));
        try {
            RegistrationGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS).register(
                    RegisterRequest.newBuilder()
                            .setVersion("v1beta1")
                            .setEndpoint(endpoint)
                            .setResourceName(GpuSmDevicePlugin.RESOURCE)
                            .setOptions(DevicePluginOptions.newBuilder().setGetPreferredAllocationAvailable(true))
                            .build());
            registrations++;
            LOG.infof("registered %s with the kubelet", GpuSmDevicePlugin.RESOURCE);
        } catch (RuntimeException e) {
            // The socket file appears when the kubelet binds it, a moment before it listens: try again shortly,
            // for as long as the socket is there (a re-created socket triggers a registration anyway).
            LOG.warnf("registration with the kubelet failed (%s); retrying in 1 s", e.getMessage());
            if (!retries.isShutdown()) {
                retries.schedule(() -> {
                    if (Files.exists(dir.resolve(KUBELET_SOCKET))) {
                        register();
                    }
                }, 1, TimeUnit.SECONDS);
            }
        } finally {
            channel.shutdownNow();
        }
    }

    private void watchKubelet() {
        try {
            while (true) {
                WatchKey key = watcher.take();
                for (WatchEvent<?> event : key.pollEvents()) {
                    Object name = event.context();
                    if (name == null) {
                        continue;
                    }
                    if (event.kind() == StandardWatchEventKinds.ENTRY_CREATE && KUBELET_SOCKET.equals(name.toString())) {
                        if (!Files.exists(dir.resolve(endpoint))) {
                            serve();
                        }
                        register();
                    } else if (event.kind() == StandardWatchEventKinds.ENTRY_DELETE && endpoint.equals(name.toString())) {
                        serve(); // the kubelet cleared the directory: serve again, register when it is back
                    }
                }
                if (!key.reset()) {
                    LOG.error("the device-plugins directory went away; no more re-registrations");
                    return;
                }
            }
        } catch (InterruptedException | ClosedWatchServiceException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            LOG.errorf(e, "cannot serve the device plugin again");
        }
    }

    @Override
    public void close() throws IOException {
        retries.shutdownNow();
        watcher.close();
        watch.interrupt();
        Server s = server;
        if (s != null) {
            s.shutdownNow();
        }
    }
}
