package io.dilu.deviceplugin.kubelet;

import io.dilu.core.contract.DiluNames;
import io.dilu.deviceplugin.agent.ContainerRef;
import io.dilu.deviceplugin.kubelet.podresources.v1.ContainerDevices;
import io.dilu.deviceplugin.kubelet.podresources.v1.ContainerResources;
import io.dilu.deviceplugin.kubelet.podresources.v1.ListPodResourcesRequest;
import io.dilu.deviceplugin.kubelet.podresources.v1.ListPodResourcesResponse;
import io.dilu.deviceplugin.kubelet.podresources.v1.PodResources;
import io.dilu.deviceplugin.kubelet.podresources.v1.PodResourcesListerGrpc;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * The kubelet's PodResources API over a real Unix socket, listing what a test says the kubelet allocated.
 * Containers of one pod are grouped as the kubelet groups them; another resource is listed beside ours so the
 * client must pick its own.
 */
public final class FakePodResources implements AutoCloseable {

    private final Map<ContainerRef, Set<String>> allocated = new ConcurrentHashMap<>();
    private final UnixSockets.Served server;

    public FakePodResources(Path socket) throws IOException {
        server = UnixSockets.serve(socket, new PodResourcesListerGrpc.PodResourcesListerImplBase() {
            @Override
            public void list(ListPodResourcesRequest request, StreamObserver<ListPodResourcesResponse> out) {
                ListPodResourcesResponse.Builder response = ListPodResourcesResponse.newBuilder();
                allocated.entrySet().stream()
                        .collect(Collectors.groupingBy(e -> e.getKey().podKey()))
                        .forEach((pod, containers) -> {
                            PodResources.Builder p = PodResources.newBuilder().setNamespace(pod.namespace()).setName(pod.name());
                            containers.forEach(e -> p.addContainers(ContainerResources.newBuilder().setName(e.getKey().container())
                                    .addDevices(ContainerDevices.newBuilder().setResourceName("example.com/nic").addDeviceIds("nic0"))
                                    .addDevices(ContainerDevices.newBuilder().setResourceName(DiluNames.GPU_SM)
                                            .addAllDeviceIds(e.getValue()))));
                            response.addPodResources(p);
                        });
                out.onNext(response.build());
                out.onCompleted();
            }
        });
    }

    public void put(ContainerRef container, java.util.Collection<String> deviceIds) {
        allocated.put(container, Set.copyOf(deviceIds));
    }

    public void remove(ContainerRef container) {
        allocated.remove(container);
    }

    @Override
    public void close() {
        server.close();
    }
}
