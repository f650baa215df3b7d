package io.dilu.extender;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Liveness of the dilu-scheduler-extender; grows real checks as the component gains its work. */
@Liveness
@ApplicationScoped
public class ExtenderLiveness implements HealthCheck {

    static final String NAME = "dilu-scheduler-extender";

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).up().build();
    }
}
