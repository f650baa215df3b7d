package io.dilu.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The load generator against real HTTP servers in this JVM. Every assertion is on counts, ratios or lower
 * bounds: the machine may be loaded, so nothing here depends on how fast anything answers.
 */
class LoadGeneratorTest {

    static final Duration RUN_LIMIT = Duration.ofMinutes(2);

    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @AfterEach
    void closeClient() {
        http.shutdownNow();
    }

    private LoadGenerator start(RateTrace trace, Supplier<List<URI>> targets, LoadSettings settings) {
        return new LoadGenerator(trace, 7, targets, http, settings, System::nanoTime).start();
    }

    private static LoadResult await(LoadGenerator load) throws Exception {
        return load.finished().get(RUN_LIMIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Waits (generously) until the run's progress satisfies {@code condition}. */
    private static void awaitProgress(LoadGenerator load, Predicate<Progress> condition) throws InterruptedException {
        long deadline = System.nanoTime() + RUN_LIMIT.toNanos();
        while (!condition.test(load.progress())) {
            assertThat(System.nanoTime()).as("progress: " + load.progress()).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    @Test
    void everyRequestOfATraceArrivesAndIsCounted() throws Exception {
        try (TestingInferenceServer server = TestingInferenceServer.answeringAfter(Duration.ofMillis(5))) {
            LoadGenerator load = start(new RateTrace("small", new double[] {5, 10, 5}), () -> List.of(server.uri()),
                    LoadSettings.DEFAULTS);
            LoadResult r = await(load);
            assertThat(r.count()).isEqualTo(20);
            double[] all = load.okLatenciesFrom(0);
            assertThat(all).as("a live view's latencies: every 2xx answer").hasSize(20);
            assertThat(java.util.Arrays.stream(all).min().orElseThrow()).isPositive();
            assertThat(load.okLatenciesFrom(15)).as("those after the 15 read already").hasSize(5);
            assertThat(load.okLatenciesFrom(25)).isEmpty();
            assertThat(r.failures()).isZero();
            assertThat(server.received()).isEqualTo(20);
            assertThat(r.requests()).extracting(RequestRecord::second).containsOnly(0, 1, 2)
                    .filteredOn(s -> s == 1).hasSize(10);
            assertThat(r.requests()).allSatisfy(q -> assertThat(q.outcome())
                    .isInstanceOfSatisfying(Outcome.Answered.class, a -> assertThat(a.status()).isEqualTo(200)));
        }
    }

    @Test
    void aServerThatAnswersNothingDoesNotHoldBackTheSending() throws Exception {
        // open loop: this server answers only once every request of the trace has reached it, which a generator
        // waiting for answers before sending more would never get to
        try (TestingInferenceServer server = TestingInferenceServer.holdingUntil(30)) {
            LoadResult r = await(start(new RateTrace("open", new double[] {10, 10, 10}), () -> List.of(server.uri()),
                    LoadSettings.DEFAULTS));
            assertThat(server.received()).isEqualTo(30);
            assertThat(r.count()).isEqualTo(30);
            assertThat(r.failures()).isZero();
        }
    }

    @Test
    void requestsSpreadOverTwoLikeServers() throws Exception {
        try (TestingInferenceServer a = TestingInferenceServer.answeringAfter(Duration.ofMillis(20));
                TestingInferenceServer b = TestingInferenceServer.answeringAfter(Duration.ofMillis(20))) {
            LoadResult r = await(start(new RateTrace("two", new double[] {10, 10, 10}), () -> List.of(a.uri(), b.uri()),
                    LoadSettings.DEFAULTS));
            assertThat(r.failures()).isZero();
            assertThat(a.received() + b.received()).isEqualTo(30);
            assertThat(a.received()).isBetween(9, 21);
        }
    }

    @Test
    void aServerHoldingItsRequestsGetsNoMoreThanOneBeyondAFastOne() throws Exception {
        try (TestingInferenceServer slow = TestingInferenceServer.holding();
                TestingInferenceServer fast = TestingInferenceServer.answeringAfter(Duration.ZERO)) {
            LoadGenerator load = start(new RateTrace("uneven", new double[] {10, 10, 10}),
                    () -> List.of(slow.uri(), fast.uri()), LoadSettings.DEFAULTS);
            awaitProgress(load, p -> p.sent() == 30);
            slow.release();
            LoadResult r = await(load);
            assertThat(r.failures()).isZero();
            // least in flight: the slow server's in-flight count is all it was sent, so it is chosen only while
            // that is no more than the fast one's, whatever the timing
            assertThat(slow.received()).isBetween(1, fast.received() + 1);
            // and the fast one answers before most of the next requests: round robin would give each 15
            assertThat(slow.received()).isLessThan(10);
        }
    }

    @Test
    void requestsWaitForATargetAndAreServedWhenOneAppears() throws Exception {
        try (TestingInferenceServer server = TestingInferenceServer.answeringAfter(Duration.ZERO)) {
            AtomicReference<List<URI>> ready = new AtomicReference<>(List.of());
            LoadGenerator load = start(new RateTrace("cold", new double[] {5, 5}), ready::get, LoadSettings.DEFAULTS);
            awaitProgress(load, p -> p.due() == 10);
            assertThat(load.progress().buffered()).isEqualTo(10);
            ready.set(List.of(server.uri()));
            LoadResult r = await(load);
            assertThat(r.failures()).isZero();
            assertThat(server.received()).isEqualTo(10);
            // the target appeared after the last request was due: each waited at least from its due time to that one's
            double lastDue = r.requests().stream().mapToDouble(q -> q.second() + q.offsetSeconds()).max().orElseThrow();
            assertThat(r.requests()).allSatisfy(q -> assertThat(((Outcome.Answered) q.outcome()).latencySeconds())
                    .isGreaterThanOrEqualTo(lastDue - q.second() - q.offsetSeconds() - 1e-6));
        }
    }

    @Test
    void timeoutsAndRefusedConnectionsAreFailures() throws Exception {
        RateTrace trace = new RateTrace("failing", new double[] {3, 3});
        LoadSettings halfSecond = new LoadSettings(Duration.ofMillis(500), 512, 10_000);
        try (TestingInferenceServer server = TestingInferenceServer.holding()) {
            LoadResult r = await(start(trace, () -> List.of(server.uri()), halfSecond));
            assertThat(r.count()).isEqualTo(6);
            assertThat(r.failures(Outcome.Failure.TIMEOUT)).isEqualTo(6);
            assertThat(r.sloViolationRate(3600)).isEqualTo(1.0);
        }
        URI closed;
        try (ServerSocket socket = new ServerSocket(0)) {
            closed = URI.create("http://127.0.0.1:" + socket.getLocalPort());
        }
        LoadResult r = await(start(trace, () -> List.of(closed), LoadSettings.DEFAULTS));
        assertThat(r.failures(Outcome.Failure.REFUSED)).isEqualTo(6);
        assertThat(r.latencyPercentile(0.5)).isNaN();
    }
}
