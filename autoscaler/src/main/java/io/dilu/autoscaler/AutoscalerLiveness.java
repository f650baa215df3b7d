package io.dilu.autoscaler;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Liveness;

/**
 * Liveness of the dilu-autoscaler: DOWN when this replica leads and its tick loop has completed no tick within
 * {@code dilu.autoscaler.liveness-missed-ticks} tick intervals, so that the kubelet restarts it and the standby
 * takes the Lease, instead of functions going unscaled behind a replica that looks healthy.
 */
@Liveness
@ApplicationScoped
public class AutoscalerLiveness implements HealthCheck {

    static final String NAME = "dilu-autoscaler";

    private final TickProgress progress;

    public AutoscalerLiveness(TickProgress progress) {
        this.progress = progress;
    }

    @Override
    public HealthCheckResponse call() {
        HealthCheckResponseBuilder response = HealthCheckResponse.named(NAME).status(!progress.stalled())
                .withData("leading", progress.last().isPresent());
        progress.last().ifPresent(l -> response.withData("lastProgress", l.toString())
                .withData("stalledAfter", progress.limit().toString()));
        return response.build();
    }
}
