package io.dilu.autoscaler.activator;

import static io.dilu.autoscaler.activator.TestingActivator.PATIENCE_SECONDS;
import static io.dilu.autoscaler.activator.TestingFrames.frame;
import static io.dilu.autoscaler.activator.TestingFrames.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dilu.autoscaler.activator.ActivatorStats.Reading;
import io.dilu.autoscaler.scrape.proto.WireStatMessage;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Knative's activator against the running autoscaler: a real websocket at {@code /} of the activator's port. Two
 * activator pods are at 127.0.0.11 and 127.0.0.12; the test's connections come from those addresses, and from
 * 127.0.0.13, which is nobody's.
 */
@QuarkusTest
class ActivatorStatsServerTest {

    static final RevisionKey HELLO = new RevisionKey("tenant-a", "hello-00001");
    static final RevisionKey IDLE = new RevisionKey("tenant-a", "idle-00001");
    static final String POD_A = "activator-6b9f-a";
    static final String POD_B = "activator-6b9f-b";
    static final Map<String, ActivatorSender> PODS = Map.of("127.0.0.11", ActivatorSender.pod(POD_A),
            "127.0.0.12", ActivatorSender.pod(POD_B));

    @Inject
    ActivatorStatsServer server;

    @Inject
    ActivatorStatsListener listener;

    @Inject
    MeterRegistry metrics;

    final AtomicBoolean leading = new AtomicBoolean(true);
    final BlockingQueue<RevisionKey> pokes = new LinkedBlockingQueue<>();
    final List<TestingActivator> activators = new ArrayList<>();

    @BeforeEach
    void configure() {
        server.senders(address -> Optional.ofNullable(PODS.get(address)));
        server.accept(k -> k.equals(HELLO) || k.equals(IDLE));
        server.accepting(leading::get);
        server.onActivity(pokes::add);
    }

    @AfterEach
    void disconnect() {
        activators.forEach(TestingActivator::close);
    }

    /** Activator pod A. */
    TestingActivator connect() throws Exception {
        return connect("127.0.0.11");
    }

    TestingActivator connect(String from) throws Exception {
        TestingActivator a = TestingActivator.connect(URI.create("ws://127.0.0.1:" + listener.port() + "/"), from);
        activators.add(a);
        return a;
    }

    RevisionKey nextPoke() throws InterruptedException {
        return pokes.poll(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }

    double refused(String reason) {
        return metrics.get("dilu_autoscaler_activator_frames_refused_total").tag("reason", reason).counter().count();
    }

    double stats(String result) {
        return metrics.get("dilu_autoscaler_activator_stats_total").tag("result", result).counter().count();
    }

    double upgradesRefused(String reason) {
        return metrics.get("dilu_autoscaler_activator_upgrades_refused_total").tag("reason", reason).counter().count();
    }

    /** A frame for HELLO from one activator pod: the first request's poke is concurrency 1, one request. */
    static byte[] hello(String pod, double concurrency, double requests) {
        return frame(message(HELLO.namespace(), HELLO.name(), pod, concurrency, requests));
    }

    @Test
    void theActivatorsStatsAreKeptAndPokeTheRevision() throws Exception {
        double unknownBefore = stats("unknown-revision");
        Instant sent = Instant.now();
        TestingActivator a = connect();
        a.send(frame(message(HELLO.namespace(), HELLO.name(), POD_A, 1, 1),
                message(IDLE.namespace(), IDLE.name(), POD_A, 0, 0),
                message("tenant-b", "invented-1", POD_A, 50, 50)));
        assertThat(nextPoke()).isEqualTo(HELLO);
        // Read at the time of sending: every report arrived at or after it, so each counts as fresh.
        Reading r = server.stats().reading(HELLO, sent).orElseThrow();
        assertThat(r.concurrency()).isEqualTo(1);
        assertThat(r.requestsPerSecond()).isEqualTo(1);
        assertThat(r.activators()).isEqualTo(1);
        assertThat(r.newest()).isAfterOrEqualTo(sent);
        assertThat(server.stats().reading(IDLE, sent)).map(Reading::concurrency).contains(0.0);
        assertThat(server.stats().reading(new RevisionKey("tenant-b", "invented-1"), sent)).isEmpty();
        // Counted once the frame's stats are kept, which is just after the poke.
        await().atMost(PATIENCE_SECONDS, TimeUnit.SECONDS).until(() -> stats("unknown-revision") - unknownBefore == 1);

        TestingActivator b = connect("127.0.0.12");
        b.send(hello(POD_B, 3, 7));
        assertThat(nextPoke()).isEqualTo(HELLO);
        assertThat(server.stats().reading(HELLO, sent)).map(Reading::requestsPerSecond).contains(8.0);
        assertThat(pokes).as("the idle revision was not poked").isEmpty();
    }

    @Test
    void anAddressThatIsNoActivatorPodsIsRefusedBeforeTheUpgrade() {
        double before = upgradesRefused("not-an-activator");
        assertThatThrownBy(() -> connect("127.0.0.13")).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e).getResponse().statusCode()).isEqualTo(403));
        assertThat(upgradesRefused("not-an-activator") - before).isEqualTo(1);
    }

    @Test
    void anActivatorThatReportsForAnotherPodIsRefusedAndOneWhosePodWentIsClosed() throws Exception {
        double wrong = refused("wrong-pod");
        TestingActivator a = connect();
        a.send(hello(POD_B, 500, 500));
        a.send(hello(POD_A, 1, 1));
        assertThat(nextPoke()).isEqualTo(HELLO);
        assertThat(refused("wrong-pod") - wrong).isEqualTo(1);
        assertThat(server.stats().reading(HELLO, Instant.now().minusSeconds(2)).orElseThrow().concurrency())
                .as("pod B's 500 was not taken from pod A's connection").isLessThan(500);
        // Pod A goes: its connection is closed at its next frame.
        server.senders(address -> Optional.ofNullable(PODS.get(address)).filter(p -> !p.pod().orElseThrow().equals(POD_A)));
        a.send(hello(POD_A, 1, 1));
        assertThat(a.endedWith()).isEqualTo(1008);
    }

    @Test
    void aFloodIsDroppedUnreadAndTheActivatorGoesOn() throws Exception {
        double before = refused("rate-limited");
        TestingActivator a = connect();
        for (int i = 0; i < 1_000; i++) {
            a.send(hello(POD_A, 0, 0));
        }
        await().atMost(PATIENCE_SECONDS, TimeUnit.SECONDS).until(() -> refused("rate-limited") - before >= 100);
        Thread.sleep(1_100); // a second refills the budget
        a.send(hello(POD_A, 1, 1));
        assertThat(nextPoke()).isEqualTo(HELLO);
        assertThat(a.ended).as("a flood does not close the connection").isNotDone();
    }

    @Test
    void aReplicaThatDoesNotLeadRefusesTheUpgrade() {
        leading.set(false);
        assertThatThrownBy(this::connect).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e).getResponse().statusCode()).isEqualTo(503));
    }

    @Test
    void aReplicaThatStopsLeadingClosesTheConnectionSoThatTheActivatorReconnects() throws Exception {
        double before = refused("not-leader");
        TestingActivator a = connect();
        leading.set(false);
        a.send(hello(POD_A, 1, 1));
        assertThat(a.endedWith()).isEqualTo(1012);
        assertThat(refused("not-leader") - before).isEqualTo(1);
        assertThat(pokes).isEmpty();
    }

    @Test
    void textAndGarbageAreCountedAndTheConnectionGoesOn() throws Exception {
        double text = refused("text");
        double malformed = refused("malformed");
        double implausible = refused("implausible");
        double badName = refused("bad-name");
        TestingActivator a = connect();
        a.sendText("{\"namespace\":\"tenant-a\"}");
        a.send("not protobuf at all".getBytes(StandardCharsets.US_ASCII));
        a.send(hello(POD_A, Double.NaN, 1));
        a.send(frame(message("tenant-a", "Hello", POD_A, 1, 1)));
        a.send(hello(POD_A, 1, 1));
        // Frames of one connection are handled in order: once the good one poked, the others were counted.
        assertThat(nextPoke()).isEqualTo(HELLO);
        assertThat(refused("text") - text).isEqualTo(1);
        assertThat(refused("malformed") - malformed).isEqualTo(1);
        assertThat(refused("implausible") - implausible).isEqualTo(1);
        assertThat(refused("bad-name") - badName).isEqualTo(1);
        assertThat(a.ended).isNotDone();
    }

    @Test
    void aConnectionThatKeepsSendingGarbageIsClosed() throws Exception {
        TestingActivator a = connect();
        for (int i = 0; i < 10; i++) {
            a.send(new byte[] {(byte) 0xff, (byte) i});
        }
        assertThat(a.endedWith()).isEqualTo(1008);
    }

    @Test
    void aMessageOverTheBoundInSmallFramesIsCountedAndTheConnectionGoesOn() throws Exception {
        double before = refused("too-large");
        TestingActivator a = connect();
        // A frame of 1 MiB and a little: valid messages, too many bytes.
        List<WireStatMessage> many = Collections.nCopies(9_000,
                message("tenant-a", "hello-00001", POD_A + "-" + "a".repeat(80), 1, 1));
        byte[] big = frame(many);
        assertThat(big.length).isGreaterThan(1_048_576);
        a.sendInFrames(big, 4096);
        a.send(hello(POD_A, 1, 1));
        assertThat(nextPoke()).isEqualTo(HELLO);
        assertThat(refused("too-large") - before).isEqualTo(1);
    }

    @Test
    void aFrameUpToTheBoundMayComeInOneWebsocketFrame() throws Exception {
        // Above Vert.x's default websocket frame size (64 KiB): the server's frame size is the activator's bound.
        byte[] large = frame(Collections.nCopies(5_000, message("tenant-a", "hello-00001", POD_A, 1, 1)));
        assertThat(large.length).isBetween(65_537, 1_048_576);
        TestingActivator a = connect();
        a.send(large);
        assertThat(nextPoke()).isEqualTo(HELLO);
    }

    @Test
    void aSingleWebsocketFrameOverTheBoundEndsTheConnection() throws Exception {
        double before = refused("too-large");
        TestingActivator a = connect();
        try {
            a.send(new byte[1_048_577]);
        } catch (ExecutionException e) {
            // The server may close before the whole frame is written.
        }
        // 1009 when the client reads the server's close frame; 1006 (or an error) when the socket closed first.
        assertThat(a.endedWith()).isIn(1009, 1006, -1);
        await().atMost(PATIENCE_SECONDS, TimeUnit.SECONDS)
                .until(() -> refused("too-large") - before == 1);
    }

    @Test
    void connectionsBeyondTheBoundAreRefusedAndAClosedOneFreesItsPlace() throws Exception {
        await().atMost(PATIENCE_SECONDS, TimeUnit.SECONDS).until(() -> connections() == 0); // earlier tests' are gone
        int refusedAt = -1;
        for (int i = 0; i < 65 && refusedAt < 0; i++) {
            try {
                connect();
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(WebSocketHandshakeException.class);
                assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(503);
                refusedAt = i;
            }
        }
        assertThat(refusedAt).as("the 65th at the latest is refused").isBetween(0, 64);
        assertThat(connections()).isEqualTo(64);
        disconnect();
        activators.clear();
        await().atMost(PATIENCE_SECONDS, TimeUnit.SECONDS).until(() -> connections() == 0);
        connect().send(hello(POD_A, 1, 1));
        assertThat(nextPoke()).isEqualTo(HELLO);
    }

    double connections() {
        return metrics.get("dilu_autoscaler_activator_connections").gauge().value();
    }

    int get(String path, String header, String value) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + path));
        if (header != null) {
            r.header(header, value);
        }
        return HttpClient.newHttpClient().send(r.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void aKubeletProbeGets200WithoutAnUpgrade() throws Exception {
        assertThat(get("/", "K-Kubelet-Probe", "queue")).isEqualTo(200);
        assertThat(get("/", "User-Agent", "kube-probe/1.31")).isEqualTo(200);
        leading.set(false);
        assertThat(get("/", "K-Kubelet-Probe", "queue")).isEqualTo(200);
        // Nothing else is served on the activator's port.
        assertThat(get("/", null, null)).isEqualTo(404);
        assertThat(get("/q/metrics", null, null)).isEqualTo(404);
    }
}
