package io.dilu.webhook;

import io.dilu.webhook.admission.AdmissionHandler;
import io.dilu.webhook.admission.AdmissionPolicy;
import io.dilu.webhook.admission.HookSettings;
import io.dilu.webhook.kube.ClusterFacts;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.common.annotation.NonBlocking;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.eclipse.microprofile.health.Readiness;
import org.jboss.logging.Logger;

/**
 * The admission endpoints the API server calls: {@code /mutate}, {@code /validate} and {@code /validate-uncovered}
 * (for namespaces the others do not cover), on the HTTPS server only
 * (health and metrics are on the management interface; see application.properties). They run on the event
 * loop: admission is pure computation over watched state, bounded by the request and container caps, and a
 * worker-thread hop doubled the slowest answers.
 */
@Singleton
@Path("/")
@Consumes(MediaType.WILDCARD)
@Produces(MediaType.APPLICATION_JSON)
public class WebhookResource {

    private static final Logger LOG = Logger.getLogger(WebhookResource.class);

    /**
     * Reviews run through admission at start. A JVM answers its first reviews slowly (class loading, Jackson
     * reading the Pod model's shape, the interpreter): measured on the local cluster, the first pod's create
     * call took 1.6 s longer than later ones. A few hundred rounds get the path compiled; they take a fraction
     * of a second of CPU once.
     */
    static final int WARM_UP_ROUNDS = 300;

    /** A GPU pod's CREATE, as the API server sends it; the answers are thrown away. */
    private static final byte[] WARM_UP_REVIEW = """
            {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"warm-up",\
            "kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"dilu-warm-up",\
            "object":{"metadata":{"name":"warm-up","namespace":"dilu-warm-up"},"spec":{"containers":[{"name":"c",\
            "image":"example","resources":{"limits":{"dilu.io/gpu-sm":"10","dilu.io/gpu-memory":"1024"}}}]}}}}"""
            .getBytes(StandardCharsets.UTF_8);

    private static final List<String> ENDPOINTS = List.of("mutate", "validate", "validate-uncovered");

    private final AdmissionHandler handler;
    private final Map<String, Counter> reviews = new HashMap<>();
    private final AdmissionReadiness readiness;

    public WebhookResource(ClusterFacts cluster, WebhookConfig config, MeterRegistry metrics,
            @Readiness AdmissionReadiness readiness) {
        this.handler = new AdmissionHandler(cluster, new AdmissionPolicy(
                new HookSettings(config.hookContainerDir(), config.hookFile(), config.schedulerName(),
                        config.runtimeClassName()),
                config.protectedHostPaths(), config.protectedContainerPaths(), Set.copyOf(config.assignedGpusWriters()),
                Set.copyOf(config.parkingWriters()), config.maxRequestBytes(), config.maxContainers(),
                config.nodeEtaViolation()));
        // Every endpoint and outcome from the start, at 0: a rate or an alert on a series never finds it missing.
        for (String endpoint : ENDPOINTS) {
            for (AdmissionHandler.Outcome outcome : AdmissionHandler.Outcome.values()) {
                reviews.put(endpoint + "/" + outcome, Counter.builder("dilu_webhook_reviews_total").tag("endpoint", endpoint)
                        .tag("outcome", outcome.name().toLowerCase(Locale.ROOT))
                        .description("admission reviews answered, by endpoint and outcome").register(metrics));
            }
        }
        this.readiness = readiness;
    }

    /** Ready only after the warm-up: a replica that takes reviews cold makes the first pods wait. */
    void warmUp(@Observes StartupEvent event) {
        long start = System.nanoTime();
        for (int i = 0; i < WARM_UP_ROUNDS; i++) {
            handler.mutate(WARM_UP_REVIEW);
            handler.validate(WARM_UP_REVIEW);
        }
        readiness.warmedUp();
        LOG.debugf("admission warmed up in %.0f ms", (System.nanoTime() - start) / 1e6);
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
    public Uni<String> validate(byte[] review) {
        return answered("validate", review, handler::validate);
    }

    @POST
    @NonBlocking
    @Path("validate-uncovered")
    public Uni<String> validateUncovered(byte[] review) {
        return answered("validate-uncovered", review, handler::uncovered);
    }

    /**
     * On the event loop, unless the review may need a ConfigMap read (a blocking API call): a pod with an envFrom,
     * or text that a JSON escape could hide one in, goes to a worker thread. Should one get past this test anyway,
     * the read refuses to run on the event loop and the pod is refused, never admitted unchecked.
     */
    private Uni<String> answered(String endpoint, byte[] review, Function<byte[], AdmissionHandler.Answer> admission) {
        if (!mayReadConfigMaps(review)) {
            return Uni.createFrom().item(count(endpoint, admission.apply(review)));
        }
        return Uni.createFrom().item(() -> count(endpoint, admission.apply(review)))
                .runSubscriptionOn(Infrastructure.getDefaultWorkerPool());
    }

    private static final byte[] ENV_FROM = "envFrom".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ESCAPE = "\\u".getBytes(StandardCharsets.US_ASCII);

    static boolean mayReadConfigMaps(byte[] review) {
        return review != null && (indexOf(review, ENV_FROM) >= 0 || indexOf(review, ESCAPE) >= 0);
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private String count(String endpoint, AdmissionHandler.Answer answer) {
        reviews.get(endpoint + "/" + answer.outcome()).increment();
        return answer.body();
    }
}
