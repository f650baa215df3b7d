package io.dilu.autoscaler.scrape;

import com.google.protobuf.InvalidProtocolBufferException;
import io.dilu.autoscaler.scrape.proto.Stat;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Reads queue-proxy's statistics ({@code GET :9090/metrics}, {@code Accept: application/protobuf}) from many
 * pods at once. A pod that does not answer in time, answers with an error, or with something that is not a
 * {@code Stat} is skipped and counted; it is never fatal.
 */
public final class StatScraper {

    /** Per-pod request rate, or empty when the pod could not be read. */
    public record Reading(String address, OptionalDouble rps) {}

    private final HttpClient http;
    private final int port;
    private final Duration timeout;

    public StatScraper(int port, Duration timeout, Executor executor) {
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout)
                .executor(executor).build();
        this.port = port;
        this.timeout = timeout;
    }

    /** Starts reading every address; the futures never fail. */
    public List<CompletableFuture<Reading>> scrape(List<String> addresses) {
        return addresses.stream().map(this::scrape).toList();
    }

    public CompletableFuture<Reading> scrape(String address) {
        HttpRequest request;
        try {
            request = HttpRequest.newBuilder(URI.create("http://" + address + ":" + port + "/metrics"))
                    .header("Accept", "application/protobuf").timeout(timeout).GET().build();
        } catch (IllegalArgumentException e) {
            return CompletableFuture.completedFuture(new Reading(address, OptionalDouble.empty()));
        }
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray())
                .thenApply(r -> new Reading(address, r.statusCode() == 200 ? rps(r.body()) : OptionalDouble.empty()))
                .exceptionally(t -> new Reading(address, OptionalDouble.empty()));
    }

    /** Requests the pod served itself in the last second: all it received, less what the activator proxied. */
    static OptionalDouble rps(byte[] body) {
        try {
            Stat stat = Stat.parseFrom(body);
            double rps = stat.getRequestCount() - stat.getProxiedRequestCount();
            return Double.isFinite(rps) && stat.getRequestCount() >= 0 && stat.getProxiedRequestCount() >= 0
                    ? OptionalDouble.of(Math.max(0, rps)) : OptionalDouble.empty();
        } catch (InvalidProtocolBufferException e) {
            return OptionalDouble.empty();
        }
    }

    /**
     * How many of {@code population} pods to read, as Knative samples large revisions: enough for a 95%
     * confidence of ±5% on the mean (Cochran's formula with finite population correction), at least 3.
     */
    public static int sampleSize(int population) {
        if (population <= 3) {
            return population;
        }
        double n0 = 1.96 * 1.96 * 0.25 / (0.05 * 0.05); // 384.16
        int n = (int) Math.ceil(n0 / (1 + (n0 - 1) / population));
        return Math.max(3, Math.min(population, n));
    }
}
