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
import org.junit.jupiter.api.Test;

/** The server before its owner configures it, and its own settings; the websocket itself is ActivatorStatsServerTest's. */
class ActivatorStatsServerDefaultsTest {

    final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    final InstantSource clock = InstantSource.fixed(Instant.parse("2026-08-01T12:00:00Z"));
    final ActivatorStatsServer server = new ActivatorStatsServer(TestingActivatorConfig.defaults(), metrics, clock);
    final RevisionKey hello = new RevisionKey("tenant-a", "hello-00001");

    @Test
    void refusesEverythingUntilConfigured() {
        byte[] f = frame(message("tenant-a", "hello-00001", "activator-1", 1, 1));
        assertThat(server.received(f)).isEqualTo(new Refused(FrameRefusal.NOT_LEADER, "this replica no longer leads"));
        server.accepting(() -> true);
        server.received(f);
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
        server.received(frame(message("tenant-a", "hello-00001", "activator-1", 2, 3)));
        assertThat(server.stats().reading(hello, clock.instant())).contains(
                new ActivatorStats.Reading(2, 3, 1, clock.instant()));
        assertThat(pokes).containsExactly(hello);
        server.accepting(() -> {
            throw new IllegalStateException("lease unknown");
        });
        assertThat(server.received(frame(message("tenant-a", "hello-00001", "activator-1", 2, 3))))
                .extracting(d -> ((Refused) d).reason()).isEqualTo(FrameRefusal.NOT_LEADER);
        assertThat(metrics.get("dilu_autoscaler_activator_frames_total").counter().count()).isEqualTo(2);
        assertThat(metrics.get("dilu_autoscaler_activator_frames_refused_total").tag("reason", "not-leader").counter().count())
                .isEqualTo(1);
    }

    @Test
    void settingsNameTheirRange() {
        TestingActivatorConfig d = TestingActivatorConfig.defaults();
        assertThatThrownBy(() -> new ActivatorStatsServer(new TestingActivatorConfig(d.maxFrameBytes(), d.maxMessagesPerFrame(),
                d.maxValue(), d.freshness(), d.maxAge(), d.maxActivatorsPerRevision(), 0, 10), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.max-connections must be at least 1, got 0");
        assertThatThrownBy(() -> new ActivatorStatsServer(new TestingActivatorConfig(d.maxFrameBytes(), d.maxMessagesPerFrame(),
                d.maxValue(), d.freshness(), d.maxAge(), d.maxActivatorsPerRevision(), 64, 0), metrics, clock))
                .hasMessage("dilu.autoscaler.activator.refused-frames-before-close must be at least 1, got 0");
        assertThatThrownBy(() -> new ActivatorStatsServer(new TestingActivatorConfig(d.maxFrameBytes(), d.maxMessagesPerFrame(),
                d.maxValue(), d.freshness(), Duration.ofSeconds(1), d.maxActivatorsPerRevision(), 64, 10), metrics, clock))
                .hasMessageStartingWith("dilu.autoscaler.activator.max-age must be at least the freshness");
    }
}
