package io.dilu.deviceplugin;

import io.dilu.deviceplugin.agent.NodeAgent;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Live while every GPU's token loop runs: a dead loop would leave its containers without tokens. */
@Liveness
@ApplicationScoped
public class NodeAgentLiveness implements HealthCheck {

    static final String NAME = "dilu-node-agent";

    private final NodeAgent agent;

    public NodeAgentLiveness(NodeAgent agent) {
        this.agent = agent;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).status(agent.tokenLoopsAlive()).withData("gpus", agent.gpus().size()).build();
    }
}
