package io.dilu.autoscaler.history;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Where the autoscaler keeps what its revisions' scalers learned (core's {@code LearnedHistory}, as its text), so that
 * a restarted or new leader continues from it: the port, as the Flink operator's autoscaler keeps its state behind
 * {@code AutoScalerStateStore}. One state per PodAutoscaler, keyed by its UID (a PodAutoscaler deleted and created
 * again under its name is another revision's, and learns afresh). Reads answer from what the store last listed, at
 * once; writes and deletes never hold the caller: they complete later, exceptionally when they failed.
 */
public interface HistoryStore {

    /** Whose state it is: the PodAutoscaler's UID, and its namespace and name, for whoever reads the store. */
    record Owner(String uid, String namespace, String name) {}

    /** Starts reading the store; whether what it holds was listed within {@code wait} (else reads may miss some). */
    boolean start(Duration wait);

    /** The state stored for the PodAutoscaler of this UID; empty for none. */
    Optional<String> read(String uid);

    /** The UIDs of the PodAutoscalers with a state stored. */
    Set<String> owners();

    /** Stores the state, replacing the owner's last one. */
    CompletionStage<Void> write(Owner owner, String state);

    /** Removes the owner's state, if there is one. */
    CompletionStage<Void> delete(String uid);

    void close();

    /** A store that keeps nothing: every leader learns from zero (the reconciler's tests that are not about the store). */
    HistoryStore NONE = new HistoryStore() {
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
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Void> delete(String uid) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    };
}
