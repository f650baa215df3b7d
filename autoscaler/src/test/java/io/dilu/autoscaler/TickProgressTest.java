package io.dilu.autoscaler;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.testing.TestingClock;
import java.time.Duration;
import java.time.Instant;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.junit.jupiter.api.Test;

class TickProgressTest {

    final TestingClock clock = new TestingClock(Instant.parse("2026-11-23T10:00:00Z"));
    /** Ten ticks of one second, the defaults. */
    final TickProgress progress = new TickProgress(clock, Duration.ofSeconds(10));
    final AutoscalerLiveness liveness = new AutoscalerLiveness(progress);

    HealthCheckResponse.Status live() {
        return liveness.call().getStatus();
    }

    @Test
    void aReplicaThatDoesNotLeadHasNoTickToWaitFor() {
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
        clock.advance(Duration.ofHours(1));
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
    }

    @Test
    void theLeaderIsDownOnceNoTickCompletedForTenTicksAndUpAgainWhenOneDoes() {
        progress.leading();
        clock.advance(Duration.ofSeconds(10));
        assertThat(live()).as("the limit itself").isEqualTo(HealthCheckResponse.Status.UP);
        clock.advance(Duration.ofMillis(1));
        assertThat(live()).as("first tick never completed").isEqualTo(HealthCheckResponse.Status.DOWN);

        progress.ticked();
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
        for (int tick = 0; tick < 30; tick++) {
            clock.advance(Duration.ofSeconds(1));
            progress.ticked();
        }
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
        clock.advance(Duration.ofSeconds(11));
        assertThat(live()).as("the tick is stuck").isEqualTo(HealthCheckResponse.Status.DOWN);
        assertThat(liveness.call().getData()).hasValueSatisfying(d -> assertThat(d)
                .containsEntry("leading", true).containsEntry("lastProgress", "2026-11-23T10:00:40.001Z"));
    }

    @Test
    void leadershipLostEndsTheWaitAndALateTickDoesNotRestartIt() {
        progress.leading();
        clock.advance(Duration.ofSeconds(30));
        progress.following();
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
        progress.ticked(); // a tick that was running when the Lease was lost
        clock.advance(Duration.ofMinutes(5));
        assertThat(live()).isEqualTo(HealthCheckResponse.Status.UP);
        assertThat(progress.last()).isEmpty();
    }
}
