package io.dilu.kube.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PodEventRecorderTest {

    static final PodEventRecorder.Source AGENT = new PodEventRecorder.Source("dilu-node-agent", "gpu-node-1", "gpu-node-1");

    /** A clock the test moves. */
    static final class Clock implements java.time.InstantSource {
        Instant now = Instant.parse("2026-11-24T10:00:00.250Z");

        @Override
        public Instant instant() {
            return now;
        }
    }

    /** Counts what the recorder reports. */
    static final class Outcomes implements PodEventRecorder.Listener {
        final List<String> seen = new ArrayList<>();

        @Override
        public void written(PodEvent event) {
            seen.add("written " + event.reason());
        }

        @Override
        public void failed(PodEvent event, RuntimeException cause) {
            seen.add("failed " + event.reason() + ": " + cause.getMessage());
        }

        @Override
        public void dropped(PodEvent event) {
            seen.add("dropped " + event.pod());
        }
    }

    @Test
    void anEventNamesThePodItsSourceAndHowOftenItHappened() {
        Clock clock = new Clock();
        List<Event> written = new ArrayList<>();
        Outcomes outcomes = new Outcomes();
        PodEventRecorder recorder = new PodEventRecorder(AGENT, new EventThrottle(Duration.ofMinutes(1), 10, 1),
                clock, written::add, Runnable::run, outcomes);
        recorder.record(PodEvent.warning("fns", "infer-1", "u-1", "DiluMemoryRefused", "refused 1 allocation"));
        recorder.record(PodEvent.warning("fns", "infer-1", "u-1", "DiluMemoryRefused", "refused 3 allocations"));
        recorder.record(PodEvent.warning("fns", "other", "u-2", "DiluMemoryRefused", "one pod too many"));
        clock.now = clock.now.plusSeconds(61);
        recorder.flush();

        assertThat(written).hasSize(2);
        Event first = written.getFirst();
        assertThat(first.getMetadata().getGenerateName()).isEqualTo("infer-1.");
        assertThat(first.getMetadata().getNamespace()).isEqualTo("fns");
        assertThat(first.getInvolvedObject().getKind()).isEqualTo("Pod");
        assertThat(first.getInvolvedObject().getName()).isEqualTo("infer-1");
        assertThat(first.getInvolvedObject().getUid()).isEqualTo("u-1");
        assertThat(first.getType()).isEqualTo("Warning");
        assertThat(first.getReason()).isEqualTo("DiluMemoryRefused");
        assertThat(first.getSource().getComponent()).isEqualTo("dilu-node-agent");
        assertThat(first.getSource().getHost()).isEqualTo("gpu-node-1");
        assertThat(first.getReportingComponent()).isEqualTo("dilu-node-agent");
        assertThat(first.getReportingInstance()).isEqualTo("gpu-node-1");
        assertThat(first.getCount()).isEqualTo(1);
        assertThat(first.getFirstTimestamp()).isEqualTo("2026-11-24T10:00:00Z");

        Event second = written.get(1);
        assertThat(second.getCount()).isEqualTo(1);
        assertThat(second.getMessage()).isEqualTo("refused 3 allocations");
        assertThat(outcomes.seen).containsExactly("written DiluMemoryRefused", "dropped other", "written DiluMemoryRefused");
    }

    @Test
    void aCountAboveOneIsInTheMessageTooAndLongMessagesAreCut() {
        Instant t = Instant.parse("2026-11-24T10:00:00Z");
        Event e = PodEventRecorder.toEvent(new EventThrottle.Emit(
                PodEvent.warning("fns", "p", "", "DiluRefused", "x".repeat(5_000)), 7, t, t.plusSeconds(50)), AGENT);
        assertThat(e.getCount()).isEqualTo(7);
        assertThat(e.getMessage()).hasSize(PodEventRecorder.MAX_MESSAGE).endsWith("…");
        assertThat(e.getInvolvedObject().getUid()).as("unknown: left out").isNull();
        e = PodEventRecorder.toEvent(new EventThrottle.Emit(PodEvent.warning("fns", "p", "", "DiluRefused", "no room"), 7,
                t, t.plusSeconds(50)), AGENT);
        assertThat(e.getMessage()).isEqualTo("no room (7 times since 2026-11-24T10:00:00Z)");
        assertThat(e.getLastTimestamp()).isEqualTo("2026-11-24T10:00:50Z");
    }

    @Test
    void aWriteTheApiServerRefusesIsReportedNotThrown() {
        Outcomes outcomes = new Outcomes();
        PodEventRecorder recorder = new PodEventRecorder(AGENT, new EventThrottle(Duration.ofMinutes(1), 10, 10),
                new Clock(), e -> {
                    throw new IllegalStateException("forbidden");
                }, Runnable::run, outcomes);
        recorder.record(PodEvent.normal("fns", "p", "u", "DiluPlaced", "placed"));
        assertThat(outcomes.seen).containsExactly("failed DiluPlaced: forbidden");
    }
}
