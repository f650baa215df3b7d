package io.dilu.autoscaler;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * When the leader's tick loop last made progress (began leading, or completed a tick), for liveness to tell a
 * tick that is stuck from one that runs. A replica that does not lead has no tick to wait for.
 */
public final class TickProgress {

    private final InstantSource clock;
    private final Duration limit;
    /** Empty while not leading. */
    private final AtomicReference<Optional<Instant>> last = new AtomicReference<>(Optional.empty());

    public TickProgress(InstantSource clock, Duration limit) {
        this.clock = clock;
        this.limit = limit;
    }

    /** This replica began leading: its first tick is due from now. */
    public void leading() {
        last.set(Optional.of(clock.instant()));
    }

    /** A tick completed (whether or not it reconciled everything: a tick that fails returns, one that is stuck does not). */
    public void ticked() {
        Instant now = clock.instant();
        // A tick that ends after leadership was lost does not make the replica look like it leads again.
        last.updateAndGet(l -> l.map(x -> now));
    }

    /** This replica stopped leading. */
    public void following() {
        last.set(Optional.empty());
    }

    /** The last progress while leading; empty while not leading. */
    public Optional<Instant> last() {
        return last.get();
    }

    public Duration limit() {
        return limit;
    }

    /** Whether the tick loop is stuck now. */
    public boolean stalled() {
        return stalled(last.get(), clock.instant(), limit);
    }

    /** Stuck: leading, and nothing completed for longer than {@code limit}. */
    static boolean stalled(Optional<Instant> last, Instant now, Duration limit) {
        return last.isPresent() && Duration.between(last.get(), now).compareTo(limit) > 0;
    }
}
