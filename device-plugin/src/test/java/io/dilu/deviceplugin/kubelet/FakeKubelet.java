package io.dilu.deviceplugin.kubelet;

import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginGrpc;
import io.dilu.deviceplugin.kubelet.v1beta1.Empty;
import io.dilu.deviceplugin.kubelet.v1beta1.ListAndWatchResponse;
import io.dilu.deviceplugin.kubelet.v1beta1.RegisterRequest;
import io.dilu.deviceplugin.kubelet.v1beta1.RegistrationGrpc;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The kubelet's side of the device plugin protocol, over real Unix sockets: a Registration server on
 * {@code kubelet.sock}, and a client of the plugin's socket once it has registered.
 */
final class FakeKubelet implements AutoCloseable {

    final BlockingQueue<RegisterRequest> registrations = new LinkedBlockingQueue<>();
    final BlockingQueue<ListAndWatchResponse> deviceLists = new LinkedBlockingQueue<>();
    private final Path dir;
    private final UnixSockets.Served server;
    private ManagedChannel plugin;

    FakeKubelet(Path dir) throws IOException {
        this.dir = dir;
        this.server = UnixSockets.serve(dir.resolve(DevicePluginEndpoint.KUBELET_SOCKET), new RegistrationGrpc.RegistrationImplBase() {
            @Override
            public void register(RegisterRequest request, StreamObserver<Empty> out) {
                registrations.add(request);
                out.onNext(Empty.getDefaultInstance());
                out.onCompleted();
            }
        });
    }

    /** Connects to the plugin that registered and starts watching its devices, as the kubelet does. */
    DevicePluginGrpc.DevicePluginBlockingStub connect(RegisterRequest registration) {
        plugin = UnixSockets.connect(dir.resolve(registration.getEndpoint()));
        DevicePluginGrpc.newStub(plugin).listAndWatch(Empty.getDefaultInstance(), new StreamObserver<>() {
            @Override
            public void onNext(ListAndWatchResponse value) {
                deviceLists.add(value);
            }

            @Override
            public void onError(Throwable t) {
                // the plugin went away; tests that care look at deviceLists
            }

            @Override
            public void onCompleted() {
            }
        });
        return DevicePluginGrpc.newBlockingStub(plugin);
    }

    @Override
    public void close() {
        if (plugin != null) {
            plugin.shutdownNow();
        }
        server.close();
    }
}
