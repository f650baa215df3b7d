package io.dilu.autoscaler.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.scaling.LearnedHistory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** The keeper over a store whose writes end only when the test says: ticks quicker than the store. */
class HistoryKeeperTest {

    private static final HistoryStore.Owner OWNER = new HistoryStore.Owner("uid-1", "ns", "pa");
    private static final Instant T0 = Instant.parse("2026-11-24T05:00:00Z");
    private static final Duration PERIOD = Duration.ofSeconds(10);

    /** A store that holds each write open until {@link #end} completes it (or fails it). */
    static final class HeldStore implements HistoryStore {
        final List<String> writes = new ArrayList<>();
        final List<CompletableFuture<Void>> open = new ArrayList<>();

        void end(boolean ok) {
            CompletableFuture<Void> w = open.removeFirst();
            if (ok) {
                w.complete(null);
            } else {
                w.completeExceptionally(new IllegalStateException("the API server is away"));
            }
        }

        @Override
        public boolean start(Duration wait) {
            return true;
        }

        @Override
        public Optional<String> read(String uid) {
            return Optional.empty();
        }

        @Override
        public Set<String> owners() {
            return Set.of();
        }

        @Override
        public CompletionStage<Void> write(Owner owner, String state) {
            writes.add(state);
            CompletableFuture<Void> w = new CompletableFuture<>();
            open.add(w);
            return w;
        }

        @Override
        public CompletionStage<Void> delete(String uid) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    }

    /** A learned state whose idle tracker last saw load at {@code lastOn}: distinct states for distinct times. */
    private static Optional<LearnedHistory> state(Instant lastOn) {
        String text = """
                version 1
                parked-until none
                idle-tracker last-on=%s off=false
                idle bin=PT10S range=PT4H out=0 counts=
                burst-tracker last-on=none off=false
                bursts bin=PT10S range=PT4H out=0 counts=
                """.formatted(lastOn);
        List<io.dilu.core.quota.FieldError> problems = new ArrayList<>();
        Optional<LearnedHistory> decoded = LearnedHistory.decode(text, lastOn, problems);
        assertThat(problems).isEmpty();
        return decoded;
    }

    @Test
    void aSaveDueWhileAWriteIsUnderWayIsWrittenOnceWhenItEndsAndAnUnchangedOneNotAtAll() {
        HeldStore store = new HeldStore();
        HistoryKeeper keeper = new HistoryKeeper(store, PERIOD, new SimpleMeterRegistry());
        keeper.offer(OWNER, state(T0), T0);
        assertThat(store.writes).as("the first state at once").hasSize(1);

        keeper.offer(OWNER, state(T0.plusSeconds(10)), T0.plusSeconds(10));
        keeper.offer(OWNER, state(T0.plusSeconds(10)), T0.plusSeconds(20));
        assertThat(store.writes).as("due while the first is under way: held, not written beside it").hasSize(1);
        store.end(true);
        assertThat(store.writes).as("written once the first ended, once").hasSize(2)
                .last().isEqualTo(state(T0.plusSeconds(10)).orElseThrow().encode());

        keeper.offer(OWNER, state(T0.plusSeconds(10)), T0.plusSeconds(40));
        store.end(true);
        keeper.offer(OWNER, state(T0.plusSeconds(10)), T0.plusSeconds(60));
        assertThat(store.writes).as("the state under way, then stored, unchanged: not written again").hasSize(2);
    }

    @Test
    void aStateWhoseWriteFailedIsWrittenAgainAtTheNextSave() {
        HeldStore store = new HeldStore();
        HistoryKeeper keeper = new HistoryKeeper(store, PERIOD, new SimpleMeterRegistry());
        keeper.offer(OWNER, state(T0), T0);
        keeper.offer(OWNER, state(T0), T0.plusSeconds(5));
        store.end(false);
        keeper.offer(OWNER, state(T0), T0.plusSeconds(6));
        assertThat(store.writes).as("within the period of the failed try: not yet").hasSize(1);
        keeper.offer(OWNER, state(T0), T0.plusSeconds(10));
        assertThat(store.writes).as("a period after the failed try, the same state again").hasSize(2);
    }
}
