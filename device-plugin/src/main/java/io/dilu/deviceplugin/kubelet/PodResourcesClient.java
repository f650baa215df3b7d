package io.dilu.deviceplugin.kubelet;

import io.dilu.deviceplugin.agent.ContainerRef;
import io.dilu.deviceplugin.kubelet.podresources.v1.ContainerDevices;
import io.dilu.deviceplugin.kubelet.podresources.v1.ContainerResources;
import io.dilu.deviceplugin.kubelet.podresources.v1.ListPodResourcesRequest;
import io.dilu.deviceplugin.kubelet.podresources.v1.PodResources;
import io.dilu.deviceplugin.kubelet.podresources.v1.PodResourcesListerGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Asks the kubelet's PodResources API (v1, on its own Unix socket) which container holds which
 * {@code dilu.io/gpu-sm} device IDs. The channel reconnects by itself when the kubelet restarts.
 */
public final class PodResourcesClient implements AutoCloseable {

    private final ManagedChannel channel;
    private final PodResourcesListerGrpc.PodResourcesListerBlockingStub stub;
    private final Duration timeout;

    public PodResourcesClient(Path socket, Duration timeout) {
        this.channel = UnixSockets.connect(socket);
        this.stub = PodResourcesListerGrpc.newBlockingStub(channel);
        this.timeout = timeout;
    }

    /**
     * The device IDs of {@code resource} per container, only containers that hold some.
     *
     * @throws StatusRuntimeException when the kubelet does not answer in time (callers must then change nothing)
     */
    public Map<ContainerRef, Set<String>> list(String resource) {
        Map<ContainerRef, Set<String>> out = new HashMap<>();
        var response = stub.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .list(ListPodResourcesRequest.getDefaultInstance());
        for (PodResources pod : response.getPodResourcesList()) {
            for (ContainerResources c : pod.getContainersList()) {
                Set<String> ids = new HashSet<>();
                for (ContainerDevices d : c.getDevicesList()) {
                    if (d.getResourceName().equals(resource)) {
                        ids.addAll(d.getDeviceIdsList());
                    }
                }
                if (!ids.isEmpty()) {
                    out.put(new ContainerRef(pod.getNamespace(), pod.getName(), c.getName()), Set.copyOf(ids));
                }
            }
        }
        return out;
    }

    @Override
    public void close() {
        channel.shutdownNow();
    }
}
