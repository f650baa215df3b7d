package io.dilu.autoscaler.scrape;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.scrape.StatScraper.Limits;
import io.dilu.autoscaler.scrape.StatScraper.Reading;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@link StatScraper} against the real emulated inference server ({@code emu-serve --stats-port}, built
 * by hook-native), as the autoscaler reads queue-proxy in a cluster: the server's hand-encoded Stat parses with
 * protobuf-java, the scraper's rate is the request_count of the period it read, and the periods' counts add up
 * to the requests sent.
 *
 * <p>Nothing depends on the machine's speed: a period is known by its process_uptime (the whole second at which
 * it ended), and a measurement in which this test missed a period (not scheduled for a second) is made again.
 */
class EmuServeStatIT {

    private static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));
    private static final String POD = "emu-serve-it";
    private static final int CLIENTS = 4;
    private static final int PER_CLIENT = 10;
    private static final int ATTEMPTS = 5;

    @TempDir
    Path tmp;

    private Process server;
    private int apiPort;
    private int statsPort;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    /** The scraper's; the traffic has threads of its own, so that blocked senders never hold up a scrape. */
    private final ExecutorService io = Executors.newFixedThreadPool(4);
    private final ExecutorService traffic = Executors.newFixedThreadPool(CLIENTS);
    private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();

    @BeforeEach
    void start() throws Exception {
        Path binary = NATIVE.resolve("bin/emu-serve").toAbsolutePath();
        assertThat(binary).as("emu-serve, built by hook-native (cmake in hook-native/target/cmake)").isExecutable();
        ProcessBuilder pb = new ProcessBuilder(binary.toString(), "--port", "0", "--host", "127.0.0.1", "--stats-port",
                "0", "--pod-name", POD, "--kernels", "2", "--blocks", "108", "--block-us", "20");
        Path emu = Files.createDirectories(tmp.resolve("emu"));
        pb.environment().put("DILU_EMU_DIR", emu.toString());
        pb.environment().put("DILU_EMU_LOG", "off");
        server = pb.redirectError(tmp.resolve("stderr.txt").toFile()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.US_ASCII));
        String api = out.readLine();
        String stats = out.readLine();
        assertThat(api).as(Files.readString(tmp.resolve("stderr.txt"))).startsWith("listening on ");
        assertThat(stats).startsWith("stats on ");
        apiPort = Integer.parseInt(api.substring("listening on ".length()));
        statsPort = Integer.parseInt(stats.substring("stats on ".length()));
    }

    @AfterEach
    void stop() throws Exception {
        io.shutdownNow();
        traffic.shutdownNow();
        http.close();
        if (server != null) {
            server.destroy();
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /** The Stat as the server encodes it, parsed by protobuf-java. */
    private Stat raw() throws Exception {
        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + statsPort + "/metrics"))
                .header("Accept", "application/protobuf").GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/protobuf");
        return Stat.parseFrom(r.body());
    }

    private void infer() {
        for (int i = 0; i < PER_CLIENT; i++) {
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + apiPort + "/infer"))
                        .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(200);
                Thread.sleep(150); // a client sends over 1.35 s: the traffic spans periods, whose counts are summed
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
    }

    /** What the scraper reads this tick. */
    private Reading scrape(StatScraper scraper) {
        try (StatScraper.Round round = scraper.round()) {
            return round.scrape(List.of("127.0.0.1")).getFirst().join();
        }
    }

    /** One measurement: true when it saw every period the traffic could land in and asserted on them. */
    private boolean measure(StatScraper scraper) throws Exception {
        Stat first = raw();
        while (first.getProcessUptime() < 1) {
            Thread.sleep(20);
            first = raw();
        }
        // Requests sent after a read of uptime k0 land in periods ending at k0 + 1 or later.
        long k0 = (long) first.getProcessUptime();
        List<Future<?>> clients = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            clients.add(traffic.submit(this::infer));
        }
        TreeMap<Long, Stat> periods = new TreeMap<>();
        long k1 = -1;
        int agreed = 0;
        for (int polls = 0; k1 < 0 || periods.lastKey() < k1 + 1; polls++) {
            assertThat(polls).as("periods still closing, the latest %s", periods.isEmpty() ? "none" : periods.lastKey())
                    .isLessThan(6000);
            boolean finished = clients.stream().allMatch(Future::isDone);
            // The scraper's reading between two reads of the same period is that period's.
            Stat before = raw();
            Reading reading = scrape(scraper);
            Stat after = raw();
            assertThat(reading.failure()).isEmpty();
            if (before.getProcessUptime() == after.getProcessUptime()) {
                assertThat(reading.rps()).hasValue(before.getRequestCount() - before.getProxiedRequestCount());
                agreed += before.getRequestCount() > 0 ? 1 : 0;
            }
            for (Stat s : List.of(before, after)) {
                assertThat(s.getPodName()).isEqualTo(POD);
                Stat seen = periods.putIfAbsent((long) s.getProcessUptime(), s);
                assertThat(seen == null || seen.equals(s)).as("a period's stat reads the same each time").isTrue();
            }
            // Every request was answered before this read of uptime k1: they all landed in periods ending by k1 + 1.
            if (finished && k1 < 0) {
                k1 = (long) before.getProcessUptime();
            }
            Thread.sleep(20);
        }
        for (Future<?> c : clients) {
            c.get();
        }
        double sum = 0;
        for (long k = k0 + 1; k <= k1 + 1; k++) {
            Stat p = periods.get(k);
            if (p == null) {
                return false; // unseen: the test was not scheduled for a second
            }
            assertThat(p.getProxiedRequestCount()).as("nothing is proxied: each request counted once").isZero();
            assertThat(p.getAverageConcurrentRequests()).isBetween(0.0, (double) CLIENTS);
            sum += p.getRequestCount();
        }
        if (agreed == 0) {
            return false; // no read of a busy period fell between two reads of it
        }
        assertThat(sum).as("requests over the periods ending at %d..%d s", k0 + 1, k1 + 1).isEqualTo(CLIENTS * PER_CLIENT);
        return true;
    }

    @Test
    void theScraperReadsEachPeriodsRateAndThePeriodsAddUpToTheRequestsSent() throws Exception {
        StatScraper scraper = new StatScraper(new Limits(statsPort, Duration.ofSeconds(5), 65536, 100_000), io, metrics);
        boolean measured = false;
        for (int attempt = 0; attempt < ATTEMPTS && !measured; attempt++) {
            measured = measure(scraper);
        }
        assertThat(measured).as("a measurement that saw every period, in %d attempts", ATTEMPTS).isTrue();
        assertThat(metrics.get("dilu_autoscaler_scrape_failures_total").counters())
                .allSatisfy(c -> assertThat(c.count()).isZero());
        // Idle again: the scraper reads 0 once a whole period passed without a request.
        Reading idle = scrape(scraper);
        for (int i = 0; i < 500 && idle.rps().orElse(-1) != 0; i++) {
            Thread.sleep(20);
            idle = scrape(scraper);
        }
        assertThat(idle.rps()).hasValue(0.0);
    }
}
