package io.dilu.deviceplugin;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Liveness of the dilu-node-agent; grows real checks as the component gains its work. */
@Liveness
@ApplicationScoped
public class NodeAgentLiveness implements HealthCheck {

    static final String NAME = "dilu-node-agent";

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).up().build();
    }
}
