package io.dilu.webhook;

import io.dilu.webhook.admission.AdmissionHandler;
import io.dilu.webhook.admission.HookSettings;
import io.dilu.webhook.kube.ClusterFacts;
import io.micrometer.core.instrument.MeterRegistry;
import io.smallrye.common.annotation.NonBlocking;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/**
 * The admission endpoints the API server calls: {@code /mutate} and {@code /validate}. They run on the event
 * loop: admission is pure computation over watched state, and a worker-thread hop doubled the slowest answers.
 */
@Path("/")
@Consumes(MediaType.WILDCARD)
@Produces(MediaType.APPLICATION_JSON)
public class WebhookResource {

    private final AdmissionHandler handler;
    private final MeterRegistry metrics;

    public WebhookResource(ClusterFacts cluster, WebhookConfig config, MeterRegistry metrics) {
        this.handler = new AdmissionHandler(cluster, new HookSettings(config.hookHostDir(), config.hookContainerDir(),
                config.hookFile(), config.schedulerName()));
        this.metrics = metrics;
    }

    @POST
    @NonBlocking
    @Path("mutate")
    public String mutate(String review) {
        return count("mutate", handler.mutate(review));
    }

    @POST
    @NonBlocking
    @Path("validate")
    public String validate(String review) {
        return count("validate", handler.validate(review));
    }

    private String count(String endpoint, AdmissionHandler.Answer answer) {
        metrics.counter("dilu_webhook_reviews_total", "endpoint", endpoint, "outcome", answer.outcome().name().toLowerCase())
                .increment();
        return answer.body();
    }
}
