package io.dilu.autoscaler;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Liveness of the dilu-autoscaler; grows real checks as the component gains its work. */
@Liveness
@ApplicationScoped
public class AutoscalerLiveness implements HealthCheck {

    static final String NAME = "dilu-autoscaler";

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).up().build();
    }
}
