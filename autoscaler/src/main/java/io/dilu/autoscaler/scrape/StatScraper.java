package io.dilu.autoscaler.scrape;

import com.google.protobuf.InvalidProtocolBufferException;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Reads queue-proxy's statistics ({@code GET :9090/metrics}, {@code Accept: application/protobuf}) from many
 * pods at once. What a pod answers is hostile input (its tenant controls the pod), so each read is bounded: at
 * most {@link Limits#maxBodyBytes} of body, one deadline for connect, headers and body together, and counts no
 * pod can have are refused. A pod that fails any of these gives no sample this tick, is counted under its
 * {@link ScrapeFailure} reason, and is never fatal.
 */
public final class StatScraper {

    private static final Logger LOG = Logger.getLogger(StatScraper.class);

    /**
     * How far one pod's answer is read.
     *
     * @param port queue-proxy's metrics port
     * @param deadline for the whole scrape: connect, headers and the last byte of the body
     * @param maxBodyBytes the largest body read
     * @param maxPodRps the largest request rate believed of one pod
     */
    public record Limits(int port, Duration deadline, int maxBodyBytes, double maxPodRps) {
        /** Generous for a Stat, whose longest form (a 253-character pod name) is under 400 bytes. */
        static final int MIN_BODY_BYTES = 1024;
        /** Beyond this the cap would no longer keep hundreds of parallel scrapes within the autoscaler's memory. */
        static final int MAX_BODY_BYTES = 16 * 1024 * 1024;

        public Limits {
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("dilu.autoscaler.queue-proxy-port must be in 1..65535, got " + port);
            }
            if (deadline.isNegative() || deadline.isZero()) {
                throw new IllegalArgumentException("dilu.autoscaler.scrape-timeout must be positive, got " + deadline);
            }
            if (maxBodyBytes < MIN_BODY_BYTES || maxBodyBytes > MAX_BODY_BYTES) {
                throw new IllegalArgumentException("dilu.autoscaler.scrape-max-bytes must be in " + MIN_BODY_BYTES + ".."
                        + MAX_BODY_BYTES + ", got " + maxBodyBytes);
            }
            if (!(maxPodRps > 0) || Double.isInfinite(maxPodRps)) {
                throw new IllegalArgumentException("dilu.autoscaler.max-pod-rps must be finite and above 0, got " + maxPodRps);
            }
        }
    }

    /** A pod's request rate and concurrency (both or neither), or why there are none. */
    public record Reading(String address, OptionalDouble rps, OptionalDouble concurrency, Optional<ScrapeFailure> failure) {
        public Reading {
            if (rps.isPresent() == failure.isPresent() || rps.isPresent() != concurrency.isPresent()) {
                throw new IllegalArgumentException("a reading has a rate and a concurrency, or a failure; got " + rps
                        + ", " + concurrency + ", " + failure);
            }
        }

        static Reading of(String address, double rps, double concurrency) {
            return new Reading(address, OptionalDouble.of(rps), OptionalDouble.of(concurrency), Optional.empty());
        }

        static Reading failed(String address, ScrapeFailure why) {
            return new Reading(address, OptionalDouble.empty(), OptionalDouble.empty(), Optional.of(why));
        }
    }

    private final Executor executor;
    private final Limits limits;
    private final Counter scrapes;
    private final Map<ScrapeFailure, Counter> failures = new EnumMap<>(ScrapeFailure.class);
    /** The client the next round uses, kept while rounds are clean so that connections stay alive; null: a new one. */
    private HttpClient http;

    public StatScraper(Limits limits, Executor executor, MeterRegistry metrics) {
        this.executor = executor;
        this.limits = limits;
        this.scrapes = Counter.builder("dilu_autoscaler_scrapes_total").description("queue-proxy scrapes").register(metrics);
        for (ScrapeFailure f : ScrapeFailure.values()) {
            failures.put(f, Counter.builder("dilu_autoscaler_scrape_failures_total")
                    .description("queue-proxy scrapes that gave no sample, by reason").tag("reason", f.reason())
                    .register(metrics));
        }
    }

    /** Starts a tick's scrapes; close the round when the tick is done with them. Rounds run one at a time. */
    public synchronized Round round() {
        if (http == null) {
            // The JDK's connect timeout closes a connect that hangs; the deadline in scrape covers the rest.
            http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(limits.deadline())
                    .executor(executor).build();
        }
        return new Round(http);
    }

    private synchronized void retire(HttpClient client) {
        if (http == client) {
            http = null;
        }
        client.shutdownNow();
    }

    /**
     * One tick's scrapes. A round in which every pod gave a sample leaves its client, and the connections it
     * keeps alive, to the next round. After any failure, closing the round closes the client with every
     * connection it holds, whatever state a pod left one in: the JDK's client fails an exchange whose head does
     * not parse (not HTTP, or headers past {@code jdk.http.maxHeaderSize}) without closing its connection, and
     * a pod that keeps sending would otherwise hold that socket for good, one more every tick.
     */
    public final class Round implements AutoCloseable {

        private final HttpClient http;
        private final List<CompletableFuture<Reading>> started = new ArrayList<>();

        private Round(HttpClient http) {
            this.http = http;
        }

        /** Starts reading every address; each future completes by the deadline and never fails. */
        public List<CompletableFuture<Reading>> scrape(List<String> addresses) {
            List<CompletableFuture<Reading>> readings = addresses.stream().map(this::scrape).toList();
            started.addAll(readings);
            return readings;
        }

        private CompletableFuture<Reading> scrape(String address) {
            HttpRequest request;
            try {
                String host = address.contains(":") ? "[" + address + "]" : address; // an IPv6 pod IP
                request = HttpRequest.newBuilder(URI.create("http://" + host + ":" + limits.port() + "/metrics"))
                        .header("Accept", "application/protobuf").GET().build();
            } catch (IllegalArgumentException e) {
                return CompletableFuture.completedFuture(count(Reading.failed(address, ScrapeFailure.UNREACHABLE)));
            }
            CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(request,
                    CappedBody.handler(limits.maxBodyBytes()));
            CompletableFuture<Reading> reading = exchange
                    .handle((response, t) -> t == null ? read(address, response.body(), limits.maxPodRps()) : failed(address, t))
                    .completeOnTimeout(Reading.failed(address, ScrapeFailure.DEADLINE), limits.deadline().toNanos(),
                            TimeUnit.NANOSECONDS);
            // The JDK times neither the body nor the whole: at the deadline the exchange is cancelled, which closes
            // the connection of a pod that trickles; once the exchange is done, cancel does nothing.
            reading.whenComplete((r, t) -> exchange.cancel(true));
            return reading.thenApply(StatScraper.this::count);
        }

        /** Closes the client unless every reading of the round is in and is a sample. */
        @Override
        public void close() {
            if (!started.stream().allMatch(f -> f.isDone() && f.join().failure().isEmpty())) {
                retire(http);
            }
        }
    }

    private Reading count(Reading r) {
        scrapes.increment();
        r.failure().ifPresent(f -> failures.get(f).increment());
        return r;
    }

    private static Reading failed(String address, Throwable t) {
        ScrapeFailure why = failure(t);
        LOG.debugf("queue-proxy %s: %s (%s)", address, why.reason(), t);
        return Reading.failed(address, why);
    }

    /** The reason for a failed exchange, from the first cause that tells. */
    static ScrapeFailure failure(Throwable t) {
        boolean io = false;
        for (Throwable c = t; c != null; c = c.getCause()) {
            switch (c) {
                case CappedBody.TooLarge x -> { return ScrapeFailure.TOO_LARGE; }
                case CappedBody.WrongStatus x -> { return ScrapeFailure.HTTP_STATUS; }
                case HttpTimeoutException x -> { return ScrapeFailure.DEADLINE; }
                // Not HTTP (the JDK's parser, including its jdk.http.maxHeaderSize), or a body cut short.
                case ProtocolException x -> { return ScrapeFailure.MALFORMED; }
                case EOFException x -> { return ScrapeFailure.MALFORMED; }
                case IOException x -> io = true;
                default -> { }
            }
        }
        return io ? ScrapeFailure.UNREACHABLE : ScrapeFailure.MALFORMED;
    }

    /**
     * The requests the pod served itself in the last second, and their average concurrency: all it received,
     * less what the activator proxied (the activator reports those itself). The counts are per-second counts of
     * the last reporting period, not running totals, so there is nothing to diff.
     */
    static Reading read(String address, byte[] body, double maxPodRps) {
        Stat stat;
        try {
            stat = Stat.parseFrom(body);
        } catch (InvalidProtocolBufferException e) {
            return Reading.failed(address, ScrapeFailure.MALFORMED);
        }
        double received = stat.getRequestCount();
        double proxied = stat.getProxiedRequestCount();
        double concurrent = stat.getAverageConcurrentRequests();
        double proxiedConcurrent = stat.getAverageProxiedConcurrentRequests();
        // Proxied requests are among those received; NaN fails every comparison and so lands here too. In-flight
        // requests cannot outnumber what a pod may serve in a second by much, so the same bound holds them.
        boolean plausible = received >= 0 && received <= maxPodRps && proxied >= 0 && proxied <= received
                && concurrent >= 0 && concurrent <= maxPodRps && proxiedConcurrent >= 0 && proxiedConcurrent <= concurrent;
        return plausible ? Reading.of(address, received - proxied, concurrent - proxiedConcurrent)
                : Reading.failed(address, ScrapeFailure.IMPLAUSIBLE);
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
