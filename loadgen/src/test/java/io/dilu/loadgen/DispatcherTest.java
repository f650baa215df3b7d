package io.dilu.loadgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The dispatcher's decisions on a clock moved by hand; sends are recorded and answered by the test. */
class DispatcherTest {

    static final long S = Arrivals.NANOS_PER_SECOND;
    static final URI A = URI.create("http://a:8080");
    static final URI B = URI.create("http://b:8080");
    static final URI C = URI.create("http://c:8080");

    record Send(int id, URI target, Duration timeout) {}

    final List<Send> sent = new ArrayList<>();
    List<URI> ready = List.of();

    private Dispatcher dispatcher(LoadSettings settings, double... rps) {
        return new Dispatcher(new RateTrace("t", rps), 1, () -> ready,
                (id, t, timeout) -> sent.add(new Send(id, t, timeout)), settings, 0);
    }

    private Dispatcher dispatcher(double... rps) {
        return dispatcher(LoadSettings.DEFAULTS, rps);
    }

    private List<URI> targetsSent() {
        return sent.stream().map(Send::target).toList();
    }

    @Test
    void eachRequestGoesToTheTargetWithFewestInFlightTiesInTurn() {
        ready = List.of(A, B);
        Dispatcher d = dispatcher(4, 2);
        d.advance(S);
        assertThat(targetsSent()).containsExactly(A, B, A, B);
        d.answered(0, 200, S + S / 2);
        d.answered(2, 200, S + S / 2);
        d.advance(2 * S);
        // A has none in flight, B two: both of second 1's requests go to A
        assertThat(targetsSent().subList(4, 6)).containsExactly(A, A);
    }

    @Test
    void theTargetsAreReadAgainForEveryRequest() {
        ready = List.of(A);
        Dispatcher d = dispatcher(2, 2, 2);
        d.advance(S);
        ready = List.of(B);
        d.advance(2 * S);
        ready = List.of(B, C);
        d.advance(3 * S);
        // a removed target gets nothing more; a new one gets the requests while it has fewer in flight
        assertThat(targetsSent()).containsExactly(A, A, B, B, C, C);
        d.answered(0, 200, 3 * S); // an answer from a target gone since still counts
        assertThat(d.tally().snapshot(3).answered()).isEqualTo(1);
    }

    @Test
    void requestsWaitWhileNoTargetIsReadyAndTheirLatencyCountsFromWhenTheyWereDue() {
        Dispatcher d = dispatcher(3);
        long wake = d.advance(S);
        assertThat(sent).isEmpty();
        assertThat(wake).isLessThanOrEqualTo(S + Dispatcher.POLL_NANOS);
        assertThat(d.tally().snapshot(1).buffered()).isEqualTo(3);
        ready = List.of(A);
        d.advance(3 * S);
        assertThat(targetsSent()).containsExactly(A, A, A);
        sent.forEach(s -> d.answered(s.id(), 200, 3 * S + S / 2));
        assertThat(d.finished(3 * S + S / 2)).isTrue();
        for (RequestRecord r : d.result().requests()) {
            assertThat(((Outcome.Answered) r.outcome()).latencySeconds()).isCloseTo(3.5 - r.offsetSeconds(), within(1e-9));
        }
        // each was sent with what was left of its timeout
        long firstOffsetNanos = Math.round(d.result().requests().getFirst().offsetSeconds() * 1e9);
        assertThat(sent.getFirst().timeout()).isEqualTo(Duration.ofNanos(firstOffsetNanos).plusSeconds(27));
    }

    @Test
    void aFullBufferOverflowsAndWaitingRequestsTimeOut() {
        Dispatcher d = dispatcher(new LoadSettings(Duration.ofSeconds(2), 10, 2), 5);
        d.advance(S);
        d.advance(3 * S);
        assertThat(d.finished(3 * S)).isTrue();
        assertThat(d.result().requests()).extracting(RequestRecord::outcome).containsExactly(
                new Outcome.Failed(Outcome.Failure.TIMEOUT), new Outcome.Failed(Outcome.Failure.TIMEOUT),
                new Outcome.Failed(Outcome.Failure.OVERFLOW), new Outcome.Failed(Outcome.Failure.OVERFLOW),
                new Outcome.Failed(Outcome.Failure.OVERFLOW));
        assertThat(sent).isEmpty();
    }

    @Test
    void theBoundOnRequestsInFlightHoldsTheRestInTheBufferAndLateAnswersAreIgnored() {
        ready = List.of(A, B);
        Dispatcher d = dispatcher(new LoadSettings(Duration.ofSeconds(5), 2, 100), 5);
        d.advance(S);
        assertThat(sent).hasSize(2);
        d.answered(0, 200, S + 1);
        d.advance(S + 2);
        assertThat(sent).hasSize(3);
        d.failed(1, Outcome.Failure.REFUSED);
        d.advance(S + 3);
        assertThat(sent).hasSize(4);
        d.advance(10 * S); // past every deadline: the two in flight time out, the one waiting too
        d.answered(2, 200, 10 * S);
        assertThat(d.finished(10 * S)).isTrue();
        LoadResult r = d.result();
        assertThat(r.failures(Outcome.Failure.TIMEOUT)).isEqualTo(3);
        assertThat(r.failures(Outcome.Failure.REFUSED)).isEqualTo(1);
        assertThat(r.count() - r.failures()).isEqualTo(1);
    }

    @Test
    void aRunLastsTheWholeTraceQuietSecondsIncluded() {
        ready = List.of(A);
        Dispatcher d = dispatcher(1, 0, 0);
        d.advance(S);
        d.answered(0, 200, S + 1);
        assertThat(d.finished(S + 1)).isFalse();
        assertThat(d.advance(S + 1)).isEqualTo(3 * S);
        assertThat(d.finished(3 * S)).isTrue();
    }

    @Test
    void stoppingCountsOpenRequestsAsUnansweredAndDropsTheRest() {
        ready = List.of(A);
        Dispatcher d = dispatcher(new LoadSettings(Duration.ofSeconds(30), 1, 100), 3, 100);
        d.advance(S);
        d.stop();
        assertThat(d.finished(S)).isTrue();
        assertThat(d.result().count()).isEqualTo(3);
        assertThat(d.result().failures(Outcome.Failure.UNANSWERED)).isEqualTo(3);
        assertThat(d.result().sloViolationRate(1)).isEqualTo(1.0);
    }
}
