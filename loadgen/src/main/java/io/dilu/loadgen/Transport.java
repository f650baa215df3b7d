package io.dilu.loadgen;

import java.net.URI;
import java.time.Duration;

/**
 * How the dispatcher sends a request: over HTTP in a run, by hand in tests. The outcome comes back later
 * through {@link Dispatcher#answered} or {@link Dispatcher#failed} on the scheduler thread, never from within
 * {@code send}.
 */
interface Transport {
    void send(int id, URI target, Duration timeout);
}
