package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Taint;
import io.fabric8.kubernetes.api.model.TaintBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.time.InstantSource;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The agent's own Node in the API server, as {@link ToolkitGate} changes it: its toolkit taint and its Events. */
final class KubeNode implements ToolkitGate.Node {

    static final String NO_SCHEDULE = "NoSchedule";
    /** Where Events about Nodes go, as the kubelet writes them. */
    private static final String EVENTS_NAMESPACE = "default";

    private final KubernetesClient client;
    private final String name;
    private final InstantSource clock;

    KubeNode(KubernetesClient client, String name, InstantSource clock) {
        this.client = client;
        this.name = name;
        this.clock = clock;
    }

    @Override
    public void taint(boolean tainted) {
        Node node = client.nodes().withName(name).get();
        if (node == null) {
            throw new IllegalStateException("there is no Node " + name);
        }
        List<Taint> taints = node.getSpec() == null || node.getSpec().getTaints() == null ? List.of() : node.getSpec().getTaints();
        if (taints.stream().anyMatch(KubeNode::ours) == tainted) {
            return;
        }
        List<Taint> next = new ArrayList<>(taints.stream().filter(t -> !ours(t)).toList());
        if (tainted) {
            next.add(new TaintBuilder().withKey(DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT).withEffect(NO_SCHEDULE).build());
        }
        // The taints are one list, written whole: only over the Node as read, so that a taint another controller
        // (the node lifecycle controller's not-ready one) added meanwhile is not lost; a conflict is the next check's.
        String patch = Serialization.asJson(List.of(
                Map.of("op", "test", "path", "/metadata/resourceVersion", "value", node.getMetadata().getResourceVersion()),
                Map.of("op", "add", "path", "/spec/taints", "value", next)));
        client.nodes().withName(name).patch(PatchContext.of(PatchType.JSON), patch);
    }

    private static boolean ours(Taint t) {
        return DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT.equals(t.getKey());
    }

    @Override
    public void event(String type, String reason, String message) {
        String now = clock.instant().truncatedTo(ChronoUnit.SECONDS).toString();
        // The kubelet names its Node by name in an Event's involvedObject.uid too; kubectl describe node finds both.
        Event e = new EventBuilder().withNewMetadata().withGenerateName(name + ".").withNamespace(EVENTS_NAMESPACE).endMetadata()
                .withNewInvolvedObject().withApiVersion("v1").withKind("Node").withName(name).withUid(name).endInvolvedObject()
                .withType(type).withReason(reason).withMessage(message).withCount(1).withFirstTimestamp(now).withLastTimestamp(now)
                .withNewSource().withComponent("dilu-node-agent").withHost(name).endSource()
                .withReportingComponent("dilu-node-agent").withReportingInstance(name).build();
        client.v1().events().inNamespace(EVENTS_NAMESPACE).resource(e).create();
    }
}
