package io.dilu.webhook;

import io.dilu.webhook.admission.AdmissionHandler;
import io.dilu.webhook.admission.AdmissionPolicy;
import io.dilu.webhook.admission.HookSettings;
import io.dilu.webhook.kube.ClusterFacts;
import io.micrometer.core.instrument.MeterRegistry;
import io.smallrye.common.annotation.NonBlocking;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.Set;

/**
 * The admission endpoints the API server calls: {@code /mutate}, {@code /validate} and {@code /validate-uncovered}
 * (for namespaces the others do not cover), on the HTTPS server only
 * (health and metrics are on the management interface; see application.properties). They run on the event
 * loop: admission is pure computation over watched state, bounded by the request and container caps, and a
 * worker-thread hop doubled the slowest answers.
 */
@Path("/")
@Consumes(MediaType.WILDCARD)
@Produces(MediaType.APPLICATION_JSON)
public class WebhookResource {

    private final AdmissionHandler handler;
    private final MeterRegistry metrics;

    public WebhookResource(ClusterFacts cluster, WebhookConfig config, MeterRegistry metrics) {
        this.handler = new AdmissionHandler(cluster, new AdmissionPolicy(
                new HookSettings(config.hookContainerDir(), config.hookFile(), config.schedulerName()),
                config.protectedHostPaths(), config.protectedContainerPaths(), Set.copyOf(config.assignedGpusWriters()),
                config.maxRequestBytes(), config.maxContainers()));
        this.metrics = metrics;
    }

    @POST
    @NonBlocking
    @Path("mutate")
    public String mutate(byte[] review) {
        return count("mutate", handler.mutate(review));
    }

    @POST
    @NonBlocking
    @Path("validate")
    public String validate(byte[] review) {
        return count("validate", handler.validate(review));
    }

    @POST
    @NonBlocking
    @Path("validate-uncovered")
    public String validateUncovered(byte[] review) {
        return count("validate-uncovered", handler.uncovered(review));
    }

    private String count(String endpoint, AdmissionHandler.Answer answer) {
        metrics.counter("dilu_webhook_reviews_total", "endpoint", endpoint, "outcome", answer.outcome().name().toLowerCase())
                .increment();
        return answer.body();
    }
}
