package io.dilu.kube.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventThrottleTest {

    private static final Instant T0 = Instant.parse("2026-11-24T10:00:00Z");
    private static final Duration MINUTE = Duration.ofMinutes(1);

    static PodEvent refused(String pod, String why) {
        return PodEvent.warning("fns", pod, "uid-" + pod, "DiluRefused", why);
    }

    static Instant at(int seconds) {
        return T0.plusSeconds(seconds);
    }

    @Test
    void onePodAndReasonIsToldOncePerWindowAndTheNextEventCarriesTheCount() {
        EventThrottle throttle = new EventThrottle(MINUTE, 100, 100);
        EventThrottle.Decision first = throttle.offer(refused("a", "no GPU has 40% free"), at(0));
        assertThat(first).isInstanceOfSatisfying(EventThrottle.Decision.Send.class,
                s -> assertThat(s.emit().count()).isEqualTo(1));
        for (int s = 1; s < 60; s++) {
            assertThat(throttle.offer(refused("a", "try " + s), at(s))).isInstanceOf(EventThrottle.Decision.Wait.class);
        }
        // Another reason, or another pod, is not held back by this one.
        assertThat(throttle.offer(PodEvent.normal("fns", "a", "uid-a", "DiluPlaced", "placed"), at(30)))
                .isInstanceOf(EventThrottle.Decision.Send.class);
        assertThat(throttle.offer(refused("b", "no"), at(30))).isInstanceOf(EventThrottle.Decision.Send.class);

        EventThrottle.Decision next = throttle.offer(refused("a", "try 60"), at(60));
        assertThat(next).isInstanceOfSatisfying(EventThrottle.Decision.Send.class, s -> {
            assertThat(s.emit().count()).as("the 59 held back, and this one").isEqualTo(60);
            assertThat(s.emit().event().message()).isEqualTo("try 60");
            assertThat(s.emit().first()).isEqualTo(at(1));
            assertThat(s.emit().last()).isEqualTo(at(60));
        });
    }

    @Test
    void whatWaitedIsToldByFlushOnceTheWindowIsOver() {
        EventThrottle throttle = new EventThrottle(MINUTE, 100, 100);
        throttle.offer(refused("a", "first"), at(0));
        throttle.offer(refused("a", "second"), at(10));
        throttle.offer(refused("a", "third"), at(20));
        assertThat(throttle.flush(at(59))).isEmpty();
        List<EventThrottle.Emit> out = throttle.flush(at(60));
        assertThat(out).singleElement().satisfies(e -> {
            assertThat(e.count()).isEqualTo(2);
            assertThat(e.event().message()).isEqualTo("third");
            assertThat(e.first()).isEqualTo(at(10));
        });
        assertThat(throttle.waiting()).isZero();
        assertThat(throttle.flush(at(200))).isEmpty();
    }

    @Test
    void aFloodOfPodsIsCappedPerWindowAndBeyondTheRememberedPodsDropped() {
        EventThrottle throttle = new EventThrottle(MINUTE, 10, 50);
        List<EventThrottle.Decision> decisions = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            decisions.add(throttle.offer(refused("p" + i, "no"), at(0)));
        }
        assertThat(decisions.stream().filter(d -> d instanceof EventThrottle.Decision.Send)).hasSize(10);
        assertThat(decisions.stream().filter(d -> d instanceof EventThrottle.Decision.Wait)).hasSize(40);
        assertThat(throttle.dropped()).isEqualTo(950);
        // The pods that waited go out at the cap's pace, oldest first.
        assertThat(throttle.flush(at(59))).isEmpty();
        List<EventThrottle.Emit> next = throttle.flush(at(60));
        assertThat(next).hasSize(10).extracting(e -> e.event().pod()).startsWith("p10", "p11");
        assertThat(throttle.flush(at(120))).hasSize(10);
        assertThat(throttle.flush(at(180))).hasSize(10);
        assertThat(throttle.flush(at(240))).hasSize(10);
        assertThat(throttle.waiting()).isZero();
        // Pods told and quiet for a window are forgotten: new pods have room again.
        throttle.flush(at(400));
        assertThat(throttle.offer(refused("new", "no"), at(400))).isInstanceOf(EventThrottle.Decision.Send.class);
    }

    @Test
    void nonsenseLimitsAreRefused() {
        assertThatThrownBy(() -> new EventThrottle(Duration.ZERO, 1, 1)).hasMessageContaining("window");
        assertThatThrownBy(() -> new EventThrottle(MINUTE, 0, 1)).hasMessageContaining("per window");
        assertThatThrownBy(() -> new EventThrottle(MINUTE, 1, 0)).hasMessageContaining("pods");
    }
}
