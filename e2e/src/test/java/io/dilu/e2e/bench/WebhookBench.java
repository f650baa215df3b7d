package io.dilu.e2e.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.JsonSurgery;
import io.dilu.testing.SelfSignedCert;
import io.fabric8.zjsonpatch.JsonPatch;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * {@code ./dilu bench webhook}: the webhook as deployed (its own process, HTTPS with a self-signed certificate)
 * answering AdmissionReviews over loopback as the API server asks them: {@code /mutate} for a GPU pod as a tenant
 * writes it, then {@code /validate} for the pod as mutated; then malformed reviews (truncated, wrong types, bad
 * quantities and annotations, junk), counting server errors. Beside each review, on the same connection, the same
 * bytes as a review of an object the webhook does not admit: parsed and answered, no admission — the reference
 * that says what transport and the machine cost in this run.
 *
 * <p>The bar: p99 at most 10 ms, and no server error. Missed, it prints a {@code FAIL:} line and exits 1 (a smoke run
 * judges the server errors only: it is too short to judge a timing on a busy machine).
 *
 * <p>Usage: {@code WebhookBench [ROUNDS] | --smoke} (3,000 rounds and 1,000 malformed reviews; smoke: 300 and 100).
 */
public final class WebhookBench {

    static final LatencyBar BAR = new LatencyBar(10);

    /**
     * A GPU pod of a Knative service as its author writes it: nothing the validator refuses, nothing of what the
     * mutator adds (the hook's environment, Dilu's defaults, the seccomp profile: the validator sees them on the
     * mutated pod, as the API server sends it).
     */
    static final String POD = """
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"fn-%d","namespace":"fns","labels":\
            {"serving.knative.dev/service":"resnet"},"annotations":{"dilu.io/sm-limit":"60"}},"spec":{\
            "schedulerName":"dilu-scheduler","containers":\
            [{"name":"server","image":"registry.local/resnet:1","resources":{"limits":{"dilu.io/gpu-sm":"30",\
            "dilu.io/gpu-memory":"2048"},"requests":{"dilu.io/gpu-sm":"30","dilu.io/gpu-memory":"2048"}}}]}}""";

    private static final String POD_KIND = "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}";
    /** The reference's kind: an object the webhook answers without admission (it admits pods only). */
    private static final String OTHER_KIND = "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"}";
    private static final ObjectMapper JSON = new ObjectMapper();

    static String review(int i, String pod) {
        return """
                {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%d",\
                %s,"resource":{"group":"","version":"v1","resource":"pods"},\
                "namespace":"fns","operation":"CREATE","object":%s}}""".formatted(i, POD_KIND, pod);
    }

    /** The same review, as one of an object the webhook does not admit: the same bytes but for the kind's name. */
    static String reference(String review) {
        return review.replace(POD_KIND, OTHER_KIND);
    }

    private WebhookBench() {}

    public static void main(String[] args) throws Exception {
        int rounds = 3000;
        int malformedCount = 1000;
        boolean smoke = args.length == 1 && args[0].equals("--smoke");
        if (smoke) {
            rounds = 300;
            malformedCount = 100;
        } else if (args.length == 1) {
            rounds = Integer.parseInt(args[0]);
        } else if (args.length > 1) {
            throw new IllegalArgumentException("usage: WebhookBench [ROUNDS] | --smoke");
        }
        int exit = run(rounds, malformedCount, !smoke);
        if (exit != 0) {
            System.exit(exit);
        }
    }

    /** Returns 0, or 1 when a server error was answered or, when {@code judge}, the latency bar was missed. */
    static int run(int rounds, int malformedCount, boolean judge) throws Exception {
        Path work = Files.createTempDirectory("dilu-bench-webhook");
        SelfSignedCert cert = SelfSignedCert.create(work);
        int management;
        int https;
        try (ServerSocket a = new ServerSocket(0); ServerSocket b = new ServerSocket(0)) {
            management = a.getLocalPort();
            https = b.getLocalPort();
        }
        try (ChildProcess webhook = ChildProcess.quarkusApp("webhook", Map.of("DILU_WEBHOOK_WATCH", "false",
                "QUARKUS_MANAGEMENT_PORT", Integer.toString(management), "QUARKUS_HTTP_SSL_PORT", Integer.toString(https),
                "DILU_WEBHOOK_TLS_CERT", cert.cert().toString(), "DILU_WEBHOOK_TLS_KEY", cert.key().toString(),
                "QUARKUS_LOG_LEVEL", "WARN", "JAVA_TOOL_OPTIONS", System.getProperty("dilu.bench.jvm", "")), work.resolve("webhook.log"))) {
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).sslContext(cert.trustingContext()).build();
            // Health is on the plain-HTTP management interface; admission on HTTPS only.
            awaitReady(HttpClient.newHttpClient(), "http://127.0.0.1:" + management + "/q/health/ready", webhook);
            String base = "https://127.0.0.1:" + https;
            int warmup = Math.max(1000, rounds * 2);
            LatencyBar.Latencies admission = new LatencyBar.Latencies(2 * rounds);
            LatencyBar.Latencies reference = new LatencyBar.Latencies(2 * rounds);
            for (int i = 0; i < warmup + rounds; i++) {
                boolean measured = i >= warmup;
                String created = review(i, POD.formatted(i));
                String mutation = timed(client, base + "/mutate", created, measured ? admission : null, true);
                JsonNode patch = JSON.readTree(Base64.getDecoder().decode(JSON.readTree(mutation).path("response").path("patch")
                        .asText()));
                timed(client, base + "/mutate", reference(created), measured ? reference : null, false);
                String mutated = review(i, JSON.writeValueAsString(JsonPatch.apply(patch, JSON.readTree(POD.formatted(i)))));
                timed(client, base + "/validate", mutated, measured ? admission : null, true);
                timed(client, base + "/validate", reference(mutated), measured ? reference : null, false);
            }
            double p99 = admission.percentileMs(0.99);
            double refP99 = reference.percentileMs(0.99);

            List<String> malformed = malformed(malformedCount, new Random(20261122));
            int serverErrors = 0;
            int denied = 0;
            int patched = 0;
            for (int i = 0; i < malformed.size(); i++) {
                HttpResponse<String> r = post(client, base + (i % 2 == 0 ? "/mutate" : "/validate"), malformed.get(i));
                if (r.statusCode() >= 500 || !r.body().contains("\"response\"")) {
                    serverErrors++;
                } else if (r.body().contains("\"allowed\":false")) {
                    denied++;
                } else if (r.body().contains("\"patch\"")) {
                    patched++;
                }
            }
            System.out.printf(Locale.ROOT, "HTTPS loopback, %d reviews (mutate, then validate of the mutated pod) after %d "
                    + "warm-up rounds: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms%n", admission.count(), warmup,
                    admission.percentileMs(0.5), admission.percentileMs(0.9), p99, admission.maxMs());
            System.out.printf(Locale.ROOT, "reference, the same bytes as reviews of a ConfigMap (same process, same connection,"
                    + " no admission): p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms%n", reference.percentileMs(0.5),
                    reference.percentileMs(0.9), refP99, reference.maxMs());
            System.out.printf(Locale.ROOT, "%d malformed reviews: %d denied, %d patched, %d allowed as they are, %d server "
                    + "errors%n", malformed.size(), denied, patched, malformed.size() - denied - patched - serverErrors,
                    serverErrors);
            List<String> failures = new ArrayList<>();
            // A smoke run is too short to judge a timing on a busy machine; server errors it always judges.
            if (judge) {
                BAR.verdict("admission reviews'", p99, refP99).ifPresent(failures::add);
            }
            if (serverErrors > 0) {
                failures.add(String.format(Locale.ROOT, "FAIL: %d of %d malformed reviews answered with a server error or "
                        + "no AdmissionReview (the bar: none)", serverErrors, malformed.size()));
            }
            failures.forEach(System.out::println);
            System.out.printf(Locale.ROOT, "BENCH webhook p99_ms=%.3f malformed_inputs=%d server_errors=%d ref_p99_ms=%.3f "
                    + "p99_bar_ms=%.0f rounds=%d%n", p99, malformed.size(), serverErrors, refP99, BAR.p99Ms(), rounds);
            return failures.isEmpty() ? 0 : 1;
        }
    }

    /**
     * Posts a review, times it into {@code into} (none during the warm-up) and returns the answer, which must be an
     * admission of the pod ({@code admitted}: with a patch or without) or a plain allowance of the reference.
     */
    private static String timed(HttpClient client, String url, String body, LatencyBar.Latencies into, boolean admitted)
            throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = post(client, url, body);
        long took = System.nanoTime() - start;
        boolean expected = r.statusCode() == 200 && r.body().contains("\"allowed\":true")
                && (admitted || !r.body().contains("\"patch\""));
        if (!expected) {
            throw new IllegalStateException(url + " answered " + r.statusCode() + ": " + r.body());
        }
        if (into != null) {
            into.add(took);
        }
        return r.body();
    }

    /** Reviews broken in the ways a buggy client or a fuzzer would break them. */
    static List<String> malformed(int count, Random rnd) {
        String good = review(0, POD.formatted(0));
        String[] values = {"null", "1", "-5", "\"x\"", "[]", "{}", "true", "\"1e9\"", "\"30.5\"", "\"-1\"", "\"\""};
        String[] keys = {"\"spec\":", "\"containers\":", "\"metadata\":", "\"request\":", "\"uid\":", "\"object\":",
                "\"annotations\":", "\"resources\":", "\"limits\":", "\"dilu.io/gpu-sm\":", "\"dilu.io/sm-limit\":",
                "\"kind\":", "\"operation\":", "\"name\":"};
        List<String> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(switch (i % 4) {
                case 0 -> good.substring(0, rnd.nextInt(good.length()));
                case 1 -> JsonSurgery.replaceValueAfter(good, keys[rnd.nextInt(keys.length)], values[rnd.nextInt(values.length)]);
                case 2 -> {
                    char[] chars = good.toCharArray();
                    for (int k = 0; k < 1 + rnd.nextInt(5); k++) {
                        chars[rnd.nextInt(chars.length)] = (char) (32 + rnd.nextInt(95));
                    }
                    yield new String(chars);
                }
                default -> {
                    byte[] junk = new byte[rnd.nextInt(200)];
                    rnd.nextBytes(junk);
                    yield new String(junk, java.nio.charset.StandardCharsets.ISO_8859_1);
                }
            });
        }
        return out;
    }

    static HttpResponse<String> post(HttpClient client, String url, String body) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static void awaitReady(HttpClient http, String url, ChildProcess process) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.alive()) {
                throw new IllegalStateException("the webhook exited: " + process.output());
            }
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (java.io.IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the webhook was not ready within 60 s: " + process.output());
    }
}
