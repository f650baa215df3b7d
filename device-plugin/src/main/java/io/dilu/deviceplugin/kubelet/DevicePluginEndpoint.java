package io.dilu.deviceplugin.kubelet;

import io.dilu.core.contract.DiluNames;
import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginOptions;
import io.dilu.deviceplugin.kubelet.v1beta1.RegisterRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.RegistrationGrpc;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Serves a device plugin on its socket in the kubelet's device-plugins directory and keeps it registered.
 * A kubelet that (re)starts removes every plugin's socket and creates {@code kubelet.sock} anew; so once a
 * second the endpoint serves again if its socket is gone, and registers again if the kubelet's socket is not
 * the one it registered with. A check of two files, rather than inotify: it works the same through any
 * mount of the directory into a container, and a failed step is simply tried again a second later.
 */
public final class DevicePluginEndpoint implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(DevicePluginEndpoint.class);
    public static final String KUBELET_SOCKET = "kubelet.sock";

    private final Path dir;
    private final String endpoint;
    private final GpuSmDevicePlugin plugin;
    private final BooleanSupplier mayServe;
    private final ScheduledExecutorService checks = Executors
            .newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("dilu-kubelet-register").unstarted(r));
    private UnixSockets.Served served;
    /** The kubelet socket registered with (its file key and modification time), or null. */
    private Object registeredWith;
    private boolean lastCheckFailed;
    private volatile int registrations;

    public DevicePluginEndpoint(Path dir, String endpoint, GpuSmDevicePlugin plugin) {
        this(dir, endpoint, plugin, () -> true);
    }

    /**
     * @param mayServe asked at every check: while false the plugin is not served (withdrawn from a kubelet it had
     *     registered with, whose devices then turn unhealthy and hand out no more shares), and served and registered
     *     again once true
     */
    public DevicePluginEndpoint(Path dir, String endpoint, GpuSmDevicePlugin plugin, BooleanSupplier mayServe) {
        this.dir = dir;
        this.endpoint = endpoint;
        this.plugin = plugin;
        this.mayServe = mayServe;
    }

    /** Serves and registers; if the kubelet is not up yet, registration happens when its socket appears. */
    public void start() throws IOException {
        synchronized (this) {
            if (mayServe.getAsBoolean()) {
                serve();
            }
        }
        check();
        checks.scheduleWithFixedDelay(this::check, 1, 1, TimeUnit.SECONDS);
    }

    /** Whether the plugin is served now (it may still wait for a kubelet to register with). */
    public synchronized boolean serving() {
        return served != null;
    }

    /** How many times the plugin registered with a kubelet. */
    public int registrations() {
        return registrations;
    }

    private synchronized void check() {
        try {
            if (!mayServe.getAsBoolean()) {
                if (served != null) {
                    served.close(); // Netty removes the socket file: the kubelet's stream to the plugin ends
                    served = null;
                    registeredWith = null;
                    LOG.warnf("withdrew %s from the kubelet: no share is handed out here until serving is allowed again",
                            DiluNames.GPU_SM);
                }
                return;
            }
            if (served == null || !Files.exists(dir.resolve(endpoint))) {
                if (served != null) {
                    LOG.info("the plugin's socket is gone (a kubelet starting clears the directory): serving again");
                }
                serve();
                registeredWith = null;
            }
            Object kubelet = identity(dir.resolve(KUBELET_SOCKET));
            if (kubelet != null && !kubelet.equals(registeredWith)) {
                register();
                registeredWith = kubelet;
                registrations++;
                LOG.infof("registered %s with the kubelet", DiluNames.GPU_SM);
            }
            lastCheckFailed = false;
        } catch (IOException | RuntimeException e) {
            // The kubelet binds its socket a moment before it listens: the next check tries again. Said once.
            if (!lastCheckFailed) {
                LOG.warnf("serving or registering the device plugin failed (%s); trying again every second", e.getMessage());
            }
            lastCheckFailed = true;
        }
    }

    private void serve() throws IOException {
        if (served != null) {
            served.close();
            served = null;
        }
        served = UnixSockets.serve(dir.resolve(endpoint), plugin);
        LOG.infof("serving %s on %s", DiluNames.GPU_SM, dir.resolve(endpoint));
    }

    private void register() {
        ManagedChannel channel = UnixSockets.connect(dir.resolve(KUBELET_SOCKET));
        try {
            RegistrationGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS).register(
                    RegisterRequest.newBuilder()
                            .setVersion("v1beta1")
                            .setEndpoint(endpoint)
                            .setResourceName(DiluNames.GPU_SM)
                            .setOptions(DevicePluginOptions.newBuilder().setGetPreferredAllocationAvailable(true))
                            .build());
        } finally {
            channel.shutdownNow();
        }
    }

    /** What tells one socket file from the next at the same path: an inode number may be reused, with its time too rarely. */
    private static Object identity(Path socket) throws IOException {
        try {
            BasicFileAttributes a = Files.readAttributes(socket, BasicFileAttributes.class);
            return a.fileKey() + "@" + a.lastModifiedTime();
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    @Override
    public void close() {
        checks.shutdownNow();
        synchronized (this) {
            if (served != null) {
                served.close();
                served = null;
            }
        }
    }
}
