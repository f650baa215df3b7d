package io.dilu.deviceplugin;

import io.dilu.deviceplugin.agent.NodeAgent;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once the device plugin has registered with the kubelet: before that no pod can get a share here. */
@Readiness
@ApplicationScoped
public class NodeAgentReadiness implements HealthCheck {

    private final NodeAgent agent;

    public NodeAgentReadiness(NodeAgent agent) {
        this.agent = agent;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("dilu-node-agent-registered").status(agent.ready()).build();
    }
}
