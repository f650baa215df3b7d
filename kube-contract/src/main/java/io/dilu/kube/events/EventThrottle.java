package io.dilu.kube.events;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How often events about pods may reach the API server: a tenant must not be able to flood it by making a
 * component refuse, throttle or fail its pods in a loop. Pure: time is passed in.
 *
 * <ul>
 *   <li>At most one event per pod and reason per {@code window}: further occurrences within it are counted,
 *       and the next event of that pod and reason carries the count (the Event's {@code count}) and the latest
 *       message. An occurrence with nothing after it is still told, by {@link #flush} once the window is over.</li>
 *   <li>At most {@code perWindow} events in any {@code window} of the whole component: what waits beyond that
 *       stays counted and goes out when there is room again.</li>
 *   <li>At most {@code maxPods} pod-and-reason pairs remembered at once: an occurrence of a new pair beyond that
 *       is dropped and counted ({@link #dropped}), so memory stays bounded whatever arrives.</li>
 * </ul>
 *
 * <p>Thread-safe; every call is short.
 */
public final class EventThrottle {

    /** An event to write now: the latest occurrence, and how many it stands for since {@code first}. */
    public record Emit(PodEvent event, int count, Instant first, Instant last) {}

    /** What becomes of one occurrence. */
    public sealed interface Decision {
        /** Write this event now. */
        record Send(Emit emit) implements Decision {}

        /** Counted: a later event of the pod and reason tells it. */
        record Wait() implements Decision {}

        /** Too many pods at once: lost, and counted in {@link #dropped}. */
        record Drop() implements Decision {}
    }

    private static final Decision WAIT = new Decision.Wait();
    private static final Decision DROP = new Decision.Drop();

    private record Key(String namespace, String pod, String reason) {}

    /** One pod and reason: when it was last told, and what happened since. */
    private static final class Slot {
        Instant lastSent;
        PodEvent pending;
        int count;
        Instant first;
        Instant last;
    }

    private final Duration window;
    private final int perWindow;
    private final int maxPods;
    private final Map<Key, Slot> slots = new LinkedHashMap<>();
    private final ArrayDeque<Instant> sent = new ArrayDeque<>();
    private long dropped;

    public EventThrottle(Duration window, int perWindow, int maxPods) {
        if (window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("the event window must be positive, got " + window);
        }
        if (perWindow < 1) {
            throw new IllegalArgumentException("events per window must be at least 1, got " + perWindow);
        }
        if (maxPods < 1) {
            throw new IllegalArgumentException("the pods remembered must be at least 1, got " + maxPods);
        }
        this.window = window;
        this.perWindow = perWindow;
        this.maxPods = maxPods;
    }

    /** One occurrence: to be written now, to wait (counted), or dropped. */
    public synchronized Decision offer(PodEvent event, Instant now) {
        Key key = new Key(event.namespace(), event.pod(), event.reason());
        Slot slot = slots.get(key);
        if (slot == null) {
            if (slots.size() >= maxPods) {
                forget(now);
            }
            if (slots.size() >= maxPods) {
                dropped++;
                return DROP;
            }
            slot = new Slot();
            slots.put(key, slot);
        }
        if (slot.count == 0) {
            slot.first = now;
        }
        slot.pending = event;
        slot.count++;
        slot.last = now;
        return due(slot, now) && room(now) ? new Decision.Send(send(slot, now)) : WAIT;
    }

    /**
     * What waited and may go out now, oldest pod first; pairs with nothing waiting whose window is over are
     * forgotten.
     */
    public synchronized List<Emit> flush(Instant now) {
        List<Emit> out = new ArrayList<>();
        for (Slot slot : slots.values()) {
            if (slot.count > 0 && due(slot, now) && room(now)) {
                out.add(send(slot, now));
            }
        }
        forget(now);
        return out;
    }

    /** Occurrences dropped because too many pods were remembered at once. */
    public synchronized long dropped() {
        return dropped;
    }

    /** Occurrences counted and not yet told. */
    public synchronized int waiting() {
        return slots.values().stream().mapToInt(s -> s.count).sum();
    }

    private boolean due(Slot slot, Instant now) {
        return slot.lastSent == null || !now.isBefore(slot.lastSent.plus(window));
    }

    private boolean room(Instant now) {
        while (!sent.isEmpty() && !now.isBefore(sent.peekFirst().plus(window))) {
            sent.pollFirst();
        }
        return sent.size() < perWindow;
    }

    private Emit send(Slot slot, Instant now) {
        Emit emit = new Emit(slot.pending, slot.count, slot.first, slot.last);
        slot.lastSent = now;
        slot.pending = null;
        slot.count = 0;
        sent.addLast(now);
        return emit;
    }

    private void forget(Instant now) {
        for (Iterator<Slot> it = slots.values().iterator(); it.hasNext(); ) {
            Slot slot = it.next();
            if (slot.count == 0 && due(slot, now)) {
                it.remove();
            }
        }
    }
}
