package io.dilu.autoscaler.scrape;

import static io.dilu.autoscaler.scrape.FakeQueueProxy.cutShort;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.headersForever;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.huge;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.notHttp;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.ok;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.status;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.trickle;

import io.dilu.autoscaler.scrape.StatScraper.Limits;
import io.dilu.autoscaler.scrape.StatScraper.Reading;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What a tenant's pod can answer the autoscaler's scrape of its queue-proxy (the tenant owns the pod, so it owns
 * the answer): floods, trickles, other protocols, garbage and counts no pod can have. Each is an attack on the
 * autoscaler; it is contained when the pod gives no sample, the failure is counted under its reason, a good pod
 * beside it is read in the same round, and the flood stops at the byte cap. Shared by {@code StatScraperTest}
 * (which asserts) and {@link ScrapeIsolationBench} (which prints).
 */
final class ScrapeAttacks {

    static final long HUGE = 1_500_000_000L;

    /** A pod: what its queue-proxy answers, and the reason it gives no sample (empty: it gives one). */
    record Pod(String name, FakeQueueProxy.Answer answer, Optional<ScrapeFailure> refused) {}

    /** What one attack achieved. */
    record Outcome(String attack, boolean contained, String detail) {}

    private ScrapeAttacks() {}

    static Pod pod(String name, FakeQueueProxy.Answer answer, ScrapeFailure refused) {
        return new Pod(name, answer, Optional.of(refused));
    }

    static byte[] stat(double received, double proxied) {
        return Stat.newBuilder().setPodName("p").setRequestCount(received).setProxiedRequestCount(proxied).build().toByteArray();
    }

    /** A good pod (12 received, 2 of them proxied: 10 rps), then every hostile one. */
    static List<Pod> goodThenHostile() {
        return List.of(
                new Pod("good", ok(stat(12, 2)), Optional.empty()),
                pod("huge-announced", huge(HUGE, true), ScrapeFailure.TOO_LARGE),
                pod("huge-chunked", huge(HUGE, false), ScrapeFailure.TOO_LARGE),
                pod("trickle", trickle(Duration.ofSeconds(60), Duration.ofMillis(100)), ScrapeFailure.DEADLINE),
                pod("headers-forever", headersForever(HUGE), ScrapeFailure.MALFORMED),
                pod("not-http", notHttp(), ScrapeFailure.MALFORMED),
                pod("garbage", ok("# TYPE not protobuf\nrequest_count 7\n".getBytes(StandardCharsets.UTF_8)),
                        ScrapeFailure.MALFORMED),
                pod("cut-short", cutShort(), ScrapeFailure.MALFORMED),
                pod("rps-1e308", ok(stat(1e308, 0)), ScrapeFailure.IMPLAUSIBLE),
                pod("rps-nan", ok(stat(Double.NaN, 0)), ScrapeFailure.IMPLAUSIBLE),
                pod("rps-negative", ok(stat(-5, 0)), ScrapeFailure.IMPLAUSIBLE),
                pod("rps-infinity", ok(stat(Double.POSITIVE_INFINITY, 0)), ScrapeFailure.IMPLAUSIBLE),
                pod("proxied-above-received", ok(stat(3, 5)), ScrapeFailure.IMPLAUSIBLE),
                pod("status-503", status(503), ScrapeFailure.HTTP_STATUS));
    }

    /** One fake per pod on its own loopback address (127.0.0.20 on), all on one port, as pods are. */
    static List<FakeQueueProxy> start(int port, List<Pod> pods, List<String> addresses) throws IOException {
        List<FakeQueueProxy> fakes = new ArrayList<>();
        int host = 20;
        for (Pod p : pods) {
            String ip = "127.0.0." + host++;
            fakes.add(FakeQueueProxy.start(ip, port, p.answer()));
            addresses.add(ip);
        }
        return fakes;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Every hostile pod scraped in one round with a good pod, under {@code deadline} and the shipped caps. */
    static List<Outcome> runAll(Duration deadline, int maxBodyBytes, double maxPodRps) throws Exception {
        List<Pod> pods = goodThenHostile();
        int port = freePort();
        List<String> addresses = new ArrayList<>();
        List<FakeQueueProxy> fakes = start(port, pods, addresses);
        ExecutorService io = Executors.newFixedThreadPool(4);
        SimpleMeterRegistry metrics = new SimpleMeterRegistry();
        try {
            StatScraper scraper = new StatScraper(new Limits(port, deadline, maxBodyBytes, maxPodRps), io, metrics);
            List<Reading> readings;
            try (StatScraper.Round round = scraper.round()) {
                readings = round.scrape(addresses).stream().map(CompletableFuture::join).toList();
            }
            boolean goodRead = readings.getFirst().rps().equals(java.util.OptionalDouble.of(10.0));
            List<Outcome> outcomes = new ArrayList<>();
            for (int i = 1; i < pods.size(); i++) {
                Reading r = readings.get(i);
                FakeQueueProxy fake = fakes.get(i);
                boolean refused = r.failure().equals(pods.get(i).refused()) && r.rps().isEmpty();
                boolean bounded = fake.written() < 64L << 20;
                outcomes.add(new Outcome("scrape-" + pods.get(i).name(), refused && bounded && goodRead,
                        "no sample (" + r.failure().map(ScrapeFailure::reason).orElse("none") + "), "
                                + (fake.written() >> 10) + " KiB sent before the hang-up, the good pod beside it read "
                                + (goodRead ? "10 rps" : "wrongly: " + readings.getFirst())));
            }
            return outcomes;
        } finally {
            for (FakeQueueProxy f : fakes) {
                f.close();
            }
            io.shutdownNow();
        }
    }
}
