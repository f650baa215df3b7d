package io.dilu.deviceplugin.agent;

/** One container of one pod: what the kubelet's PodResources API names and what owns a GPU share. */
public record ContainerRef(String namespace, String pod, String container) {

    public PodKey podKey() {
        return new PodKey(namespace, pod);
    }

    @Override
    public String toString() {
        return namespace + "/" + pod + "/" + container;
    }

    /** A pod by namespace and name. */
    public record PodKey(String namespace, String name) {}
}
