package io.dilu.core.lifecycle;

import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Written;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The parks and wakes a revision's realizer wrote that the watch may not show yet: explicitly owned mutable state, one
 * per revision, kept between ticks. Each pod's writes are kept in the order they were made, and one is forgotten only
 * once the watch has shown it and every write before it: a pod parked and then woken while the watch is two writes
 * behind shows "not parked" before its park, which is not its wake (read as the wake, it would be woken twice once
 * the watch shows the park).
 */
public final class UnseenWrites {

    private final Duration lag;
    private final Map<String, Deque<Written>> byUid = new HashMap<>();

    /** @param lag how long a write is believed over a watch that does not show it */
    public UnseenWrites(Duration lag) {
        this.lag = lag;
    }

    public void wrote(String uid, Written write) {
        byUid.computeIfAbsent(uid, k -> new ArrayDeque<>()).addLast(write);
    }

    /**
     * The instances as watched at {@code now}, with the writes it does not show yet as made. Forgets the writes the watch
     * shows, those of pods it no longer has, and those older than the lag.
     */
    public InstanceLifecycle over(InstanceLifecycle seen, Instant now) {
        if (byUid.isEmpty()) {
            return seen;
        }
        Map<String, Instance> watched = seen.instances().stream()
                .collect(Collectors.toMap(Instance::uid, p -> p, (a, b) -> a));
        Map<String, Written> latest = new HashMap<>();
        byUid.entrySet().removeIf(e -> {
            Instance p = watched.get(e.getKey());
            if (p == null) {
                return true; // gone from the watch
            }
            Deque<Written> writes = e.getValue();
            writes.removeIf(w -> Duration.between(w.at(), now).compareTo(lag) > 0);
            while (!writes.isEmpty() && writes.peekFirst().shownBy(p)) {
                writes.removeFirst();
            }
            if (writes.isEmpty()) {
                return true;
            }
            latest.put(e.getKey(), writes.peekLast());
            return false;
        });
        return seen.with(latest);
    }

    public boolean isEmpty() {
        return byUid.isEmpty();
    }
}
