package io.dilu.loadgen;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The load generator's decisions, on one thread and with time passed in: which requests are due, where each
 * goes, which wait and which are given up. Requests wait in a FIFO buffer while no target is ready (as Knative's
 * activator holds requests while a revision scales from zero) or while the bound on requests in flight is
 * reached, and are sent as soon as that changes.
 */
final class Dispatcher {

    /**
     * How often the targets are read again while requests wait: the supplier cannot say when a pod becomes
     * ready, and 10 ms is small beside a cold start while costing a sleeping thread nothing.
     */
    static final long POLL_NANOS = 10_000_000;

    /** A request due and not yet ended; {@code target} is null while it waits in the buffer. */
    private record Pending(int id, Arrivals.Arrival arrival, long due, long deadline, URI target) {
        Pending to(URI t) {
            return new Pending(id, arrival, due, deadline, t);
        }
    }

    private final String traceName;
    private final Arrivals arrivals;
    private final Supplier<List<URI>> targets;
    private final Transport transport;
    private final LoadSettings settings;
    private final long start;
    /** When the trace's last second is over: a run lasts the whole trace, quiet seconds at its end included. */
    private final long end;
    private final Tally tally = new Tally();
    /** By id (the order requests were due); null until the request ends. */
    private final List<RequestRecord> records = new ArrayList<>();
    private final ArrayDeque<Pending> buffer = new ArrayDeque<>();
    /** In the order sent, which is the order of their deadlines: the first is the next to time out. */
    private final LinkedHashMap<Integer, Pending> inFlight = new LinkedHashMap<>();
    private final Map<URI, Integer> outstanding = new HashMap<>();
    private Arrivals.Arrival next;
    /** Where the next search for the least loaded target starts, so that ties go to the targets in turn. */
    private int cursor;
    private boolean stopped;

    Dispatcher(RateTrace trace, long seed, Supplier<List<URI>> targets, Transport transport, LoadSettings settings,
            long start) {
        this.traceName = trace.name();
        this.arrivals = new Arrivals(trace, seed);
        this.targets = targets;
        this.transport = transport;
        this.settings = settings;
        this.start = start;
        this.end = start + trace.seconds() * Arrivals.NANOS_PER_SECOND;
        this.next = arrivals.next();
    }

    Tally tally() {
        return tally;
    }

    /**
     * Gives up requests past their deadline, releases every request due by {@code now} and sends what can be
     * sent; returns when to be called again at the latest (answers aside).
     */
    long advance(long now) {
        if (stopped) {
            return Long.MAX_VALUE;
        }
        expire(now);
        for (; next != null && next.dueNanos(start) <= now; next = arrivals.next()) {
            long due = next.dueNanos(start);
            buffer.add(new Pending(records.size(), next, due, due + settings.timeout().toNanos(), null));
            records.add(null);
            tally.due();
            drain(now);
            if (buffer.size() > settings.maxBuffered()) {
                end(buffer.pollLast(), new Outcome.Failed(Outcome.Failure.OVERFLOW));
            }
        }
        drain(now);
        return wake(now);
    }

    void answered(int id, int status, long now) {
        Pending p = inFlight.remove(id);
        if (p != null) { // else given up already, or the run was stopped
            end(p, new Outcome.Answered(status, (now - p.due()) / 1e9));
        }
    }

    void failed(int id, Outcome.Failure failure) {
        Pending p = inFlight.remove(id);
        if (p != null) {
            end(p, new Outcome.Failed(failure));
        }
    }

    /** Ends the run now: requests still waiting or in flight count as unanswered; those not yet due are not part of it. */
    void stop() {
        for (Pending p : buffer) {
            end(p, new Outcome.Failed(Outcome.Failure.UNANSWERED));
        }
        buffer.clear();
        for (Pending p : inFlight.values()) {
            end(p, new Outcome.Failed(Outcome.Failure.UNANSWERED));
        }
        inFlight.clear();
        stopped = true;
    }

    /** Whether the run is over: stopped, or the trace is over and every request has ended. */
    boolean finished(long now) {
        return stopped || (now >= end && next == null && buffer.isEmpty() && inFlight.isEmpty());
    }

    /** Once {@link #finished}. */
    LoadResult result() {
        return new LoadResult(traceName, records);
    }

    private void expire(long now) {
        while (!buffer.isEmpty() && buffer.peek().deadline() <= now) {
            end(buffer.poll(), new Outcome.Failed(Outcome.Failure.TIMEOUT));
        }
        for (Iterator<Pending> it = inFlight.values().iterator(); it.hasNext(); ) {
            Pending p = it.next();
            if (p.deadline() > now) {
                break;
            }
            it.remove();
            end(p, new Outcome.Failed(Outcome.Failure.TIMEOUT));
        }
    }

    private void drain(long now) {
        while (!buffer.isEmpty() && inFlight.size() < settings.maxOutstanding()) {
            URI target = leastOutstanding(targets.get());
            if (target == null) {
                return;
            }
            Pending p = buffer.poll().to(target);
            inFlight.put(p.id(), p);
            outstanding.merge(target, 1, Integer::sum);
            tally.sent();
            transport.send(p.id(), target, Duration.ofNanos(p.deadline() - now));
        }
    }

    /**
     * The ready target with the fewest requests in flight, ties in turn; null when none is ready. Knative's
     * activator, for a revision without a concurrency limit, sends to the less loaded of two pods picked at
     * random (pkg/activator/net/lb_policy.go); comparing all targets, and taking ties in turn rather than by a
     * coin, gives the same choice for two pods and keeps runs reproducible.
     */
    private URI leastOutstanding(List<URI> ready) {
        if (ready.isEmpty()) {
            return null;
        }
        int best = -1;
        int bestLoad = Integer.MAX_VALUE;
        for (int i = 0; i < ready.size(); i++) {
            int k = (cursor + i) % ready.size();
            int load = outstanding.getOrDefault(ready.get(k), 0);
            if (load < bestLoad) {
                best = k;
                bestLoad = load;
            }
        }
        cursor = best + 1;
        return ready.get(best);
    }

    private void end(Pending p, Outcome outcome) {
        if (p.target() != null) {
            // removed at zero: targets come and go over a run, and a gone pod's entry should go with it
            outstanding.computeIfPresent(p.target(), (t, n) -> n == 1 ? null : n - 1);
        }
        Arrivals.Arrival a = p.arrival();
        records.set(p.id(), new RequestRecord(a.second(), a.offsetNanos() / 1e9, outcome));
        tally.ended(outcome, p.target() != null);
    }

    private long wake(long now) {
        long wake = next != null ? next.dueNanos(start) : now < end ? end : Long.MAX_VALUE;
        if (!buffer.isEmpty()) {
            wake = Math.min(wake, Math.min(buffer.peek().deadline(), now + POLL_NANOS));
        }
        if (!inFlight.isEmpty()) {
            wake = Math.min(wake, inFlight.firstEntry().getValue().deadline());
        }
        return wake;
    }
}
