package io.dilu.autoscaler.activator;

import static io.dilu.autoscaler.activator.TestingFrames.frame;
import static io.dilu.autoscaler.activator.TestingFrames.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.autoscaler.activator.ActivatorFrames.Refused;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The server before its owner configures it, and its own settings; the websocket itself is ActivatorStatsServerTest's. */
class ActivatorStatsServerDefaultsTest {

    static final String ADDRESS = "10.244.1.7";
    static final ActivatorSender POD = ActivatorSender.pod("activator-1");

    final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    final InstantSource clock = InstantSource.fixed(Instant.parse("2026-08-01T12:00:00Z"));
    final ActivatorStatsServer server = new ActivatorStatsServer(TestingActivatorConfig.defaults(), metrics, clock);
    final RevisionKey hello = new RevisionKey("tenant-a", "hello-00001");

    double refused(String reason) {
        return metrics.get("dilu_autoscaler_activator_frames_refused_total").tag("reason", reason).counter().count();
    }

    @Test
    void refusesEverythingUntilConfigured() {
        byte[] f = frame(message("tenant-a", "hello-00001", "activator-1", 1, 1));
        assertThat(server.received(f, ADDRESS, POD)).isEqualTo(new Refused(FrameRefusal.NOT_LEADER, "this replica no longer leads"));
        server.accepting(() -> true);
        assertThat(server.received(f, ADDRESS, POD)).as("no address is an activator's yet")
                .extracting(d -> ((Refused) d).reason()).isEqualTo(FrameRefusal.NOT_AN_ACTIVATOR);
        server.senders(address -> Optional.ofNullable(Map.of(ADDRESS, POD).get(address)));
        server.received(f, ADDRESS, POD);
        assertThat(server.stats().reading(hello, clock.instant())).as("no revision is known yet").isEmpty();
        assertThat(metrics.get("dilu_autoscaler_activator_stats_total").tag("result", "unknown-revision").counter().count())
                .isEqualTo(1);
    }

    @Test
    void onceConfiguredKeepsAndTellsAndALeadershipCheckThatThrowsRefuses() {
        List<RevisionKey> pokes = new ArrayList<>();
        server.accept(hello::equals);
        server.onActivity(pokes::add);
        server.accepting(() -> true);
        server.senders(address -> Optional.of(POD));
        server.received(frame(message("tenant-a", "hello-00001", "activator-1", 2, 3)), ADDRESS, POD);
        assertThat(server.stats().reading(hello, clock.instant())).contains(
                new ActivatorStats.Reading(2, 3, 1, clock.instant()));
        assertThat(pokes).containsExactly(hello);
        server.accepting(() -> {
            throw new IllegalStateException("lease unknown");
        });
        assertThat(server.received(frame(message("tenant-a", "hello-00001", "activator-1", 2, 3)), ADDRESS, POD))
                .extracting(d -> ((Refused) d).reason()).isEqualTo(FrameRefusal.NOT_LEADER);
        assertThat(metrics.get("dilu_autoscaler_activator_frames_total").counter().count()).isEqualTo(2);
        assertThat(refused("not-leader")).isEqualTo(1);
    }

    @Test
    void anActivatorSpeaksForItselfOnlyAndAConnectionWhosePodWentIsRefused() {
        server.accept(hello::equals);
        server.accepting(() -> true);
        Map<String, ActivatorSender> pods = new java.util.HashMap<>(Map.of(ADDRESS, POD));
        server.senders(address -> Optional.ofNullable(pods.get(address)));
        Refused other = (Refused) server.received(frame(message("tenant-a", "hello-00001", "activator-2", 50, 50)), ADDRESS, POD);
        assertThat(other.reason()).isEqualTo(FrameRefusal.WRONG_POD);
        assertThat(other.detail()).isEqualTo("messages[0].stat.pod_name must be the connection's activator pod 'activator-1', "
                + "got 'activator-2'");
        assertThat(server.stats().reading(hello, clock.instant())).isEmpty();
        // The pod went (or its address now belongs to another pod): the connection that came from it is refused.
        pods.put(ADDRESS, ActivatorSender.pod("activator-9"));
        assertThat(server.received(frame(message("tenant-a", "hello-00001", "activator-1", 1, 1)), ADDRESS, POD))
                .extracting(d -> ((Refused) d).reason()).isEqualTo(FrameRefusal.NOT_AN_ACTIVATOR);
        server.senders(address -> {
            throw new IllegalStateException("informer broken");
        });
        assertThat(server.received(frame(message("tenant-a", "hello-00001", "activator-1", 1, 1)), ADDRESS, POD))
                .extracting(d -> ((Refused) d).reason()).isEqualTo(FrameRefusal.NOT_AN_ACTIVATOR);
        assertThat(refused("wrong-pod")).isEqualTo(1);
        assertThat(refused("not-an-activator")).isEqualTo(2);
    }

    @Test
    void withoutAuthenticationAnySenderMayNameAnyPod() {
        server.accept(hello::equals);
        server.accepting(() -> true);
        server.senders(address -> Optional.of(ActivatorSender.unchecked()));
        server.received(frame(message("tenant-a", "hello-00001", "activator-1", 1, 1),
                message("tenant-a", "hello-00001", "activator-2", 2, 2)), ADDRESS, ActivatorSender.unchecked());
        assertThat(server.stats().reading(hello, clock.instant())).map(ActivatorStats.Reading::activators).contains(2);
    }

    @Test
    void settingsNameTheirRange() {
        TestingActivatorConfig d = TestingActivatorConfig.defaults();
        assertThatThrownBy(() -> new ActivatorStatsServer(d.withConnections(0, 10), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.max-connections must be at least 1, got 0");
        assertThatThrownBy(() -> new ActivatorStatsServer(d.withConnections(64, 0), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.refused-frames-before-close must be at least 1, got 0");
        assertThatThrownBy(() -> new ActivatorStatsServer(d.withMaxAge(Duration.ofSeconds(1)), metrics, clock))
                .hasMessageStartingWith("dilu.autoscaler.activator.max-age must be at least the freshness");
        assertThatThrownBy(() -> new ActivatorStatsServer(d.withRates(0, 4_194_304), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.max-frames-per-second must be at least 1, got 0");
        assertThatThrownBy(() -> new ActivatorStatsServer(d.withRates(100, 1000), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.max-bytes-per-second must be at least max-frame-bytes (1048576), got 1000");
        assertThatThrownBy(() -> new ActivatorStats.Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60), 0, 1))
                .hasMessage("dilu.autoscaler.activator.max-revision-concurrency must be finite and above 0, got 0.0");
        assertThatThrownBy(() -> new ActivatorStats.Bounds(3, Duration.ofSeconds(3), Duration.ofSeconds(60), 1, Double.NaN))
                .hasMessage("dilu.autoscaler.activator.max-revision-rps must be finite and above 0, got NaN");
        assertThatThrownBy(() -> ActivatorPods.label("activator"))
                .hasMessage("dilu.autoscaler.activator.pod-label must be key=value (e.g. app=activator), got 'activator'");
    }
}
