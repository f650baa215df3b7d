package io.dilu.deviceplugin.gpu;

import io.dilu.core.placement.GpuDevice;
import io.dilu.kube.InventoryAnnotation;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.List;
import org.jboss.logging.Logger;

/** Writes the node's GPU inventory on its Node object, for the scheduler extender. */
public final class InventoryPublisher {

    private static final Logger LOG = Logger.getLogger(InventoryPublisher.class);

    private final KubernetesClient client;
    private final String node;

    public InventoryPublisher(KubernetesClient client, String node) {
        this.client = client;
        this.node = node;
    }

    /** Publishes; false (and a log line) when the Node or the API server cannot be reached, to be retried. */
    public boolean publish(List<GpuDevice> gpus) {
        String json = InventoryAnnotation.write(gpus);
        try {
            if (client.nodes().withName(node).get() == null) {
                LOG.warnf("Node %s does not exist (yet); the GPU inventory is published when it does", node);
                return false;
            }
            client.nodes().withName(node).edit(n -> {
                n.getMetadata().getAnnotations().put(InventoryAnnotation.KEY, json);
                return n;
            });
            LOG.infof("published %d GPU(s) on Node %s", gpus.size(), node);
            return true;
        } catch (KubernetesClientException e) {
            LOG.warnf("cannot publish the GPU inventory on Node %s: %s", node, e.getMessage());
            return false;
        }
    }
}
