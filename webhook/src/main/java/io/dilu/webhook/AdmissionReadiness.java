package io.dilu.webhook;

import io.quarkus.vertx.http.HttpsServerStart;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.ObservesAsync;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready once the HTTPS server that serves admission listens and admission has warmed up. The probes go to the
 * management interface, which can answer before that server is bound; without this check a replica would take
 * admission reviews it cannot yet accept (and with failurePolicy Fail, pods would be refused).
 */
@Readiness
@ApplicationScoped
public class AdmissionReadiness implements HealthCheck {

    static final String NAME = "dilu-webhook-https";

    private volatile boolean listening;
    private volatile boolean warmedUp;

    void listening(@ObservesAsync HttpsServerStart event) {
        listening = true;
    }

    /** Admission has run its warm-up reviews (see {@link WebhookResource#WARM_UP_ROUNDS}). */
    void warmedUp() {
        warmedUp = true;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named(NAME).status(listening && warmedUp).build();
    }
}
