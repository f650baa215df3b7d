package io.dilu.autoscaler.scrape;

import static io.dilu.autoscaler.scrape.FakeQueueProxy.chunked;
import static io.dilu.autoscaler.scrape.FakeQueueProxy.ok;
import static io.dilu.autoscaler.scrape.ScrapeAttacks.freePort;
import static io.dilu.autoscaler.scrape.ScrapeAttacks.pod;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.autoscaler.scrape.ScrapeAttacks.Pod;
import io.dilu.autoscaler.scrape.StatScraper.Limits;
import io.dilu.autoscaler.scrape.StatScraper.Reading;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class StatScraperTest {

    /** Longer than the 800 ms default, so that the good pod is read in time on a loaded machine. */
    static final Duration DEADLINE = Duration.ofSeconds(5);
    /** Well past the deadline, well short of the trickle's 60 s: how long the test waits for what must happen. */
    static final Duration PATIENCE = Duration.ofSeconds(30);

    final ExecutorService io = Executors.newFixedThreadPool(4);
    final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    final List<FakeQueueProxy> fakes = new ArrayList<>();

    @AfterEach
    void stop() throws IOException {
        for (FakeQueueProxy f : fakes) {
            f.close();
        }
        io.shutdownNow();
    }

    static byte[] stat(double received, double proxied) {
        return ScrapeAttacks.stat(received, proxied);
    }

    /** One fake per pod, each on its own loopback address and all on one port, as pods are; by address. */
    Map<String, FakeQueueProxy> start(int port, List<Pod> pods) throws IOException {
        List<String> addresses = new ArrayList<>();
        List<FakeQueueProxy> started = ScrapeAttacks.start(port, pods, addresses);
        fakes.addAll(started);
        Map<String, FakeQueueProxy> byAddress = new LinkedHashMap<>();
        for (int i = 0; i < started.size(); i++) {
            byAddress.put(addresses.get(i), started.get(i));
        }
        return byAddress;
    }

    double failures(ScrapeFailure reason) {
        return metrics.get("dilu_autoscaler_scrape_failures_total").tag("reason", reason.reason()).counter().count();
    }

    @Test
    void eachHostilePodGivesNoSampleAndIsCountedWhileAGoodPodBesideThemIsReadInTheSameTick() throws Exception {
        List<Pod> pods = ScrapeAttacks.goodThenHostile();
        int port = freePort();
        Map<String, FakeQueueProxy> fakesByAddress = start(port, pods);
        List<FakeQueueProxy> fake = List.copyOf(fakesByAddress.values());
        List<String> addresses = new ArrayList<>(fakesByAddress.keySet());
        addresses.add("127.0.0.19"); // nothing listens there
        StatScraper scraper = new StatScraper(new Limits(port, DEADLINE, 65536, 100_000), io, metrics);

        List<CompletableFuture<Reading>> readings;
        try (StatScraper.Round round = scraper.round()) {
            readings = round.scrape(addresses);
            // The tick is not held up: every reading is in long before the slowest pod would have finished.
            CompletableFuture.allOf(readings.toArray(CompletableFuture[]::new)).get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
        }

        assertThat(readings.getFirst().join().rps()).hasValue(10.0);
        for (int i = 1; i < pods.size(); i++) {
            Reading r = readings.get(i).join();
            assertThat(r.address()).isEqualTo(addresses.get(i));
            assertThat(r.failure()).as(pods.get(i).name()).isEqualTo(pods.get(i).refused());
            assertThat(r.rps()).as(pods.get(i).name() + ": absent, neither zero nor the bogus value").isEmpty();
        }
        assertThat(readings.getLast().join().failure()).hasValue(ScrapeFailure.UNREACHABLE);
        assertThat(metrics.get("dilu_autoscaler_scrapes_total").counter().count()).isEqualTo(15);
        for (ScrapeFailure reason : ScrapeFailure.values()) {
            long expected = pods.stream().filter(p -> p.refused().equals(Optional.of(reason))).count()
                    + (reason == ScrapeFailure.UNREACHABLE ? 1 : 0);
            assertThat(failures(reason)).as(reason.reason()).isEqualTo(expected);
        }

        // The trickling pod was cut off at the deadline: it saw the client hang up while it still had bytes to send.
        assertThat(fake.get(3).clientGone(PATIENCE)).as("trickle cut off").isTrue();
        assertThat(fake.get(3).finished()).isFalse();
        // The pods that send without end were hung up on, by the end of the tick at the latest, having got out
        // no more than socket buffers hold (a few MiB on loopback): the client stopped reading at the cap.
        for (int i : new int[] {1, 2, 4, 5}) {
            assertThat(fake.get(i).clientGone(PATIENCE)).as(pods.get(i).name() + " hung up on").isTrue();
            assertThat(fake.get(i).written()).as(pods.get(i).name()).isLessThan(64L << 20);
        }
        // The next tick, on a client of its own since this one saw failures, reads the good pod again.
        try (StatScraper.Round next = scraper.round()) {
            assertThat(next.scrape(List.of(addresses.getFirst())).getFirst().join().rps()).hasValue(10.0);
        }
    }

    @Test
    void theCapHoldsToTheByteWhetherTheLengthIsAnnouncedOrChunked() throws Exception {
        byte[] atCap = Stat.newBuilder().setPodName("p".repeat(1003)).setRequestCount(12).setProxiedRequestCount(2)
                .build().toByteArray();
        byte[] overCap = Stat.newBuilder().setPodName("p".repeat(1004)).setRequestCount(12).setProxiedRequestCount(2)
                .build().toByteArray();
        assertThat(atCap).hasSize(1024);
        assertThat(overCap).hasSize(1025);
        List<Pod> pods = List.of(new Pod("at cap, announced", ok(atCap), Optional.empty()),
                new Pod("at cap, chunked", chunked(atCap, 100), Optional.empty()),
                pod("over cap, announced", ok(overCap), ScrapeFailure.TOO_LARGE),
                pod("over cap, chunked", chunked(overCap, 100), ScrapeFailure.TOO_LARGE));
        int port = freePort();
        List<String> addresses = List.copyOf(start(port, pods).keySet());
        StatScraper scraper = new StatScraper(new Limits(port, DEADLINE, 1024, 100_000), io, metrics);

        List<Reading> readings;
        try (StatScraper.Round round = scraper.round()) {
            readings = round.scrape(addresses).stream().map(CompletableFuture::join).toList();
        }

        assertThat(readings).extracting(Reading::failure).containsExactlyElementsOf(pods.stream().map(Pod::refused).toList());
        assertThat(readings.get(0).rps()).hasValue(10.0);
        assertThat(readings.get(1).rps()).hasValue(10.0);
    }

    @Test
    void aRateIsWhatThePodServedItselfAndCountsNoPodCanHaveAreRefused() {
        assertThat(StatScraper.read("p", stat(12, 2), 100).rps()).hasValue(10.0);
        assertThat(StatScraper.read("p", stat(0, 0), 100).rps()).hasValue(0.0);
        assertThat(StatScraper.read("p", stat(100, 0), 100).rps()).as("the bound itself").hasValue(100.0);
        assertThat(StatScraper.read("p", "# HELP not protobuf\n".getBytes(StandardCharsets.UTF_8), 100).failure())
                .hasValue(ScrapeFailure.MALFORMED);
        for (double[] bogus : new double[][] {{100.5, 0}, {1e308, 1e308}, {Double.NaN, 0}, {5, Double.NaN},
                {Double.POSITIVE_INFINITY, 0}, {Double.NEGATIVE_INFINITY, 0}, {-5, 0}, {5, -1}, {3, 5}}) {
            Reading r = StatScraper.read("p", stat(bogus[0], bogus[1]), 100);
            assertThat(r.rps()).as("%s received, %s proxied", bogus[0], bogus[1]).isEmpty();
            assertThat(r.failure()).hasValue(ScrapeFailure.IMPLAUSIBLE);
        }
    }

    @Test
    void concurrencyIsWhatThePodCarriedItselfAndImplausibleConcurrencyIsRefused() {
        byte[] body = Stat.newBuilder().setRequestCount(12).setAverageConcurrentRequests(7.5)
                .setAverageProxiedConcurrentRequests(2.5).build().toByteArray();
        assertThat(StatScraper.read("p", body, 100).concurrency()).hasValue(5.0);
        for (double[] bogus : new double[][] {{Double.NaN, 0}, {-1, 0}, {5, 6}, {101, 0}, {5, Double.NaN}}) {
            byte[] b = Stat.newBuilder().setRequestCount(1).setAverageConcurrentRequests(bogus[0])
                    .setAverageProxiedConcurrentRequests(bogus[1]).build().toByteArray();
            Reading r = StatScraper.read("p", b, 100);
            assertThat(r.concurrency()).as("%s in flight, %s proxied", bogus[0], bogus[1]).isEmpty();
            assertThat(r.failure()).hasValue(ScrapeFailure.IMPLAUSIBLE);
        }
    }

    @Test
    void limitsOutOfRangeNameTheirKeyAndRange() {
        assertThatThrownBy(() -> new Limits(9090, Duration.ZERO, 65536, 100_000))
                .hasMessageContaining("dilu.autoscaler.scrape-timeout must be positive");
        assertThatThrownBy(() -> new Limits(9090, DEADLINE, 100, 100_000))
                .hasMessageContaining("dilu.autoscaler.scrape-max-bytes must be in 1024..16777216, got 100");
        assertThatThrownBy(() -> new Limits(9090, DEADLINE, 65536, Double.NaN))
                .hasMessageContaining("dilu.autoscaler.max-pod-rps must be finite and above 0");
        assertThatThrownBy(() -> new Limits(0, DEADLINE, 65536, 100_000))
                .hasMessageContaining("dilu.autoscaler.queue-proxy-port must be in 1..65535");
    }

    @Test
    void largeRevisionsAreSampled() {
        assertThat(StatScraper.sampleSize(2)).isEqualTo(2);
        assertThat(StatScraper.sampleSize(10)).isEqualTo(10);
        assertThat(StatScraper.sampleSize(100)).isEqualTo(80);
        assertThat(StatScraper.sampleSize(10_000)).isLessThan(400).isGreaterThan(300);
    }
}
