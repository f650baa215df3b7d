package io.dilu.e2e.bench;

import io.dilu.testing.ChildProcess;
import io.dilu.testing.JsonSurgery;
import io.dilu.testing.SelfSignedCert;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * {@code ./dilu bench webhook}: the webhook as deployed (its own process, HTTPS with a self-signed certificate)
 * answering AdmissionReviews over loopback: the latency of mutate and validate for a GPU pod, then 1,000
 * malformed reviews (truncated, wrong types, bad quantities and annotations, junk), counting server errors.
 */
public final class WebhookBench {

    static final String POD = """
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"fn-%d","namespace":"fns","labels":\
            {"serving.knative.dev/service":"resnet"},"annotations":{"dilu.io/sm-limit":"60"}},"spec":{\
            "schedulerName":"dilu-scheduler","containers":\
            [{"name":"server","image":"registry.local/resnet:1","resources":{"limits":{"dilu.io/gpu-sm":"30",\
            "dilu.io/gpu-memory":"2048"},"requests":{"dilu.io/gpu-sm":"30","dilu.io/gpu-memory":"2048"}}}]}}""";

    static String review(int i, String pod) {
        return """
                {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%d",\
                "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},\
                "namespace":"fns","operation":"CREATE","object":%s}}""".formatted(i, pod);
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
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
            long[] micros = new long[2 * rounds];
            int n = 0;
            for (int i = 0; i < warmup + rounds; i++) {
                String body = review(i, POD.formatted(i));
                for (String path : List.of("/mutate", "/validate")) {
                    long start = System.nanoTime();
                    HttpResponse<String> r = post(client, base + path, body);
                    long took = System.nanoTime() - start;
                    if (r.statusCode() != 200 || !r.body().contains("\"allowed\":true")) {
                        throw new IllegalStateException(path + " answered " + r.statusCode() + ": " + r.body());
                    }
                    if (i >= warmup) {
                        micros[n++] = took / 1000;
                    }
                }
            }
            Arrays.sort(micros);
            double p50 = micros[n / 2] / 1000.0;
            double p99 = micros[(int) Math.ceil(n * 0.99) - 1] / 1000.0;

            List<String> malformed = malformed(1000, new Random(20261122));
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
            System.out.printf("HTTPS loopback, %d reviews (mutate and validate) after %d warm-up rounds: p50 %.3f ms, p90 %.3f ms, "
                    + "p99 %.3f ms, max %.3f ms%n", n, warmup, p50, micros[(int) (n * 0.9)] / 1000.0, p99, micros[n - 1] / 1000.0);
            System.out.printf("%d malformed reviews: %d denied, %d patched, %d allowed as they are, %d server errors%n",
                    malformed.size(), denied, patched, malformed.size() - denied - patched - serverErrors, serverErrors);
            System.out.printf("BENCH webhook p99_ms=%.3f malformed_inputs=%d server_errors=%d%n", p99, malformed.size(), serverErrors);
        }
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
