package io.dilu.autoscaler.history;

import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.LearnedHistory;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * When the reconciler's revisions' learned states go to the {@link HistoryStore} and come back: read once, when the
 * reconciler first meets a revision (a new leader, or a revision new to this one); written when it changed, at most
 * once per {@code savePeriod}; removed when its PodAutoscaler is gone. A state that does not read is refused whole
 * and logged (the revision learns from zero, and its next save replaces it); a write that fails is logged and tried
 * again at the next save, a period later. Nothing here waits for the API server. Called from the reconciler's one
 * thread; the store completes writes on its own.
 */
public final class HistoryKeeper {

    private static final Logger LOG = Logger.getLogger(HistoryKeeper.class);

    /**
     * What this leader knows of an owner's stored state: its text as last stored ({@code null}: not known, e.g. a
     * refused one); the newest text handed over, under way or due (the stored one when none is): a state equal to it
     * is not written again; and when a write was last tried (success or not): the period runs from there.
     */
    private record Saved(String stored, String latest, Instant tried) {}

    private final HistoryStore store;
    private final Duration savePeriod;
    private final Map<String, Saved> saved = new ConcurrentHashMap<>();
    /** Owners with a write or delete under way: one at a time each, so a slow store never queues more. */
    private final Set<String> busy = ConcurrentHashMap.newKeySet();
    /** Per owner under way, the newest save that came due meanwhile. */
    private final Map<String, Due> due = new ConcurrentHashMap<>();
    private final Counter restored;
    private final Counter refused;
    private final Counter written;
    private final Counter failed;

    public HistoryKeeper(HistoryStore store, Duration savePeriod, MeterRegistry metrics) {
        if (savePeriod == null || !savePeriod.isPositive()) {
            throw new IllegalArgumentException("dilu.autoscaler.history-save-period must be > 0, got " + savePeriod);
        }
        this.store = store;
        this.savePeriod = savePeriod;
        String what = "revisions' stored histories, by what became of them";
        this.restored = counter(metrics, "restored", what);
        this.refused = counter(metrics, "refused", what);
        this.written = counter(metrics, "written", what);
        this.failed = counter(metrics, "write-failed", what);
    }

    private static Counter counter(MeterRegistry metrics, String result, String description) {
        return Counter.builder("dilu_autoscaler_histories_total").tag("result", result).description(description)
                .register(metrics);
    }

    /** Starts the store; whether what it holds was listed within {@code wait}. */
    public boolean start(Duration wait) {
        return store.start(wait);
    }

    public void close() {
        store.close();
    }

    /** The state stored for the revision, read and checked at {@code now}; empty when there is none or it is refused. */
    public Optional<LearnedHistory> restore(HistoryStore.Owner owner, Instant now) {
        Optional<String> text = store.read(owner.uid());
        if (text.isEmpty()) {
            return Optional.empty();
        }
        List<FieldError> problems = new ArrayList<>();
        Optional<LearnedHistory> learned = LearnedHistory.decode(text.get(), now, problems);
        if (learned.isEmpty()) {
            refused.increment();
            LOG.warnf("PodAutoscaler %s/%s: its stored history is refused, it learns from zero: %s", owner.namespace(),
                    owner.name(), problems.stream().map(FieldError::message).collect(Collectors.joining("; ")));
            return Optional.empty();
        }
        saved.put(owner.uid(), new Saved(text.get(), text.get(), now));
        restored.increment();
        LOG.infof("PodAutoscaler %s/%s: continues from its stored history", owner.namespace(), owner.name());
        return learned;
    }

    /**
     * After a tick's decision: stores what the revision's scaler has learned if it changed since the last write and a
     * period has passed since the last try (the first write of a revision comes at once). A save that comes due while
     * the revision's last write is still under way is kept, the newest one only, and made as soon as that write ends:
     * ticks quicker than the store lose no state.
     */
    public void offer(HistoryStore.Owner owner, Optional<LearnedHistory> learned, Instant now) {
        String uid = owner.uid();
        Saved last = saved.get(uid);
        if (learned.isEmpty() || (last != null && now.isBefore(last.tried().plus(savePeriod)))) {
            return;
        }
        String text = learned.get().encode(); // only once the period allows: a tick encodes few revisions
        if (last != null && text.equals(last.latest())) {
            return;
        }
        saved.put(uid, new Saved(last == null ? null : last.stored(), text, now));
        synchronized (due) { // against the writer thread's hand-over of the newest save due
            if (!busy.add(uid)) {
                due.put(uid, new Due(owner, text));
                return;
            }
        }
        write(owner, text);
    }

    /** A save that came due while the owner's last write was under way. */
    private record Due(HistoryStore.Owner owner, String text) {}

    private void write(HistoryStore.Owner owner, String text) {
        String uid = owner.uid();
        attempt(() -> store.write(owner, text)).whenComplete((ok, failure) -> {
            if (failure == null) {
                written.increment();
            } else {
                failed.increment();
                LOG.warnf("PodAutoscaler %s/%s: its history was not stored (tried again in %s): %s", owner.namespace(),
                        owner.name(), savePeriod, failure.getMessage());
            }
            Due next;
            synchronized (due) {
                next = due.remove(uid);
                if (next == null) {
                    busy.remove(uid);
                }
                // A failed write's state is not the stored one: the next save that comes due writes it again.
                saved.computeIfPresent(uid, (k, s) -> {
                    String stored = failure == null ? text : s.stored();
                    return new Saved(stored, next != null ? next.text() : stored, s.tried());
                });
            }
            if (next != null) {
                write(next.owner(), next.text());
            }
        });
    }

    /** The store's answer; a store that throws instead of answering fails the same way, never the caller's tick. */
    private static CompletionStage<Void> attempt(Supplier<CompletionStage<Void>> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Removes the states of PodAutoscalers not in {@code live} (the UIDs of those the reconciler handles), and forgets
     * them here: a revision that went takes its history along. A delete that fails is tried again at the next call.
     */
    public void prune(Set<String> live) {
        saved.keySet().retainAll(live);
        due.keySet().retainAll(live);
        for (String uid : store.owners()) {
            if (!live.contains(uid) && busy.add(uid)) {
                attempt(() -> store.delete(uid)).whenComplete((ok, failure) -> {
                    if (failure != null) {
                        LOG.warnf("the stored history of PodAutoscaler %s, which is gone, was not removed (tried again "
                                + "at the next tick): %s", uid, failure.getMessage());
                    } else {
                        LOG.debugf("removed the stored history of PodAutoscaler %s, which is gone", uid);
                    }
                    busy.remove(uid);
                });
            }
        }
    }
}
