package io.dilu.webhook;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Liveness of the dilu-webhook; grows real checks as the component gains its work. */
@Liveness
@ApplicationScoped
public class WebhookLiveness implements HealthCheck {

    static final String NAME = "dilu-webhook";

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).up().build();
    }
}
