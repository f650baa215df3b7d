package io.dilu.extender;

import io.dilu.extender.kube.ClusterWatcher;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once Nodes and Pods have been read: before that every placement would be a guess. */
@Readiness
@ApplicationScoped
public class ExtenderReadiness implements HealthCheck {

    private final ClusterWatcher watcher;

    public ExtenderReadiness(ClusterWatcher watcher) {
        this.watcher = watcher;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("dilu-extender-synced").status(watcher.synced()).build();
    }
}
