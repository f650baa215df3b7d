package io.dilu.extender;

import io.dilu.extender.kube.ClusterWatcher;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready once Nodes and Pods have been read (before that every placement would be a guess) and the filter path
 * has warmed up ({@link ExtenderWarmUp}).
 */
@Readiness
@ApplicationScoped
public class ExtenderReadiness implements HealthCheck {

    private final ClusterWatcher watcher;
    private final ExtenderWarmUp warmUp;

    public ExtenderReadiness(ClusterWatcher watcher, ExtenderWarmUp warmUp) {
        this.watcher = watcher;
        this.warmUp = warmUp;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("dilu-extender-synced").status(watcher.synced() && warmUp.done()).build();
    }
}
