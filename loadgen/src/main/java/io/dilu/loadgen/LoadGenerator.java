package io.dilu.loadgen;

import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * An open-loop load generator: replays a per-second rate trace as POST {@code <target>/infer} requests (what
 * emu-serve answers) and records every request's latency from when it was due to its answer. Sending never
 * waits for answers; each second's requests go out at Poisson-spaced instants ({@link Arrivals}), each to the
 * ready target with the fewest requests in flight, and wait in a bounded buffer while no target is ready
 * ({@link Dispatcher}).
 *
 * <p>One run per instance. One scheduler thread makes every decision and sleeps until the next request is due;
 * answers come back on the {@link HttpClient}'s threads and are handed to it as messages, so the dispatcher
 * needs no lock and nothing spins. Latencies include the scheduler's own lateness in sending (the time between
 * a request's due instant and its send), as a client's would.
 */
public final class LoadGenerator {

    private final Supplier<List<URI>> targets;
    private final HttpClient http;
    private final LongSupplier nanoClock;
    private final RateTrace trace;
    private final long seed;
    private final LoadSettings settings;
    private final ConcurrentLinkedQueue<Runnable> mailbox = new ConcurrentLinkedQueue<>();
    private final CompletableFuture<LoadResult> finished = new CompletableFuture<>();
    private final Thread scheduler = Thread.ofPlatform().name("dilu-load").daemon().unstarted(this::loop);
    private Dispatcher dispatcher;
    private long start;

    /**
     * @param targets the ready targets (base URLs such as {@code http://10.0.0.5:8080}), read again every time a
     *     request is sent: pods that become ready get traffic, pods that go stop getting it
     * @param http the client that carries the requests; HTTP/1.1 suits emu-serve (no h2c upgrade to refuse)
     * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime})
     */
    public LoadGenerator(RateTrace trace, long seed, Supplier<List<URI>> targets, HttpClient http, LoadSettings settings,
            LongSupplier nanoClock) {
        this.trace = trace;
        this.seed = seed;
        this.targets = targets;
        this.http = http;
        this.settings = settings;
        this.nanoClock = nanoClock;
    }

    /** How many requests a run of {@code trace} sends: its rates added up, fractions carried from second to second. */
    public static long requests(RateTrace trace) {
        return Arrivals.count(trace);
    }

    /** Starts the run: second 0 of the trace begins now. */
    public synchronized LoadGenerator start() {
        if (dispatcher != null) {
            throw new IllegalStateException("a LoadGenerator runs once");
        }
        start = nanoClock.getAsLong();
        dispatcher = new Dispatcher(trace, seed, targets, this::send, settings, start);
        scheduler.start();
        return this;
    }

    /**
     * Completes when the trace's last second is over and every request has ended (answered, failed or timed out),
     * or at {@link #stop()}; exceptionally if the run broke (a target the HTTP client cannot send to, a failing
     * supplier).
     */
    public CompletableFuture<LoadResult> finished() {
        return finished;
    }

    /** The run so far; callable from any thread. */
    public synchronized Progress progress() {
        if (dispatcher == null) {
            throw new IllegalStateException("not started");
        }
        return dispatcher.tally().snapshot((nanoClock.getAsLong() - start) / 1e9);
    }

    /**
     * The latencies of the 2xx answers in the order they ended, from the {@code from}-th on (0 for all): a live view
     * keeps the count it has read and gets the answers of its latest interval.
     */
    public synchronized double[] okLatenciesFrom(int from) {
        if (dispatcher == null) {
            throw new IllegalStateException("not started");
        }
        return dispatcher.tally().okLatenciesFrom(from);
    }

    /**
     * Ends the run now and returns its result: requests waiting or in flight count as unanswered, later ones are
     * not sent. The result of a run that had finished already is returned as it was.
     */
    public LoadResult stop() {
        synchronized (this) {
            if (dispatcher == null) {
                throw new IllegalStateException("not started");
            }
        }
        post(() -> dispatcher.stop());
        return finished.join();
    }

    private void post(Runnable message) {
        mailbox.add(message);
        LockSupport.unpark(scheduler);
    }

    private void loop() {
        try {
            while (true) {
                for (Runnable m = mailbox.poll(); m != null; m = mailbox.poll()) {
                    m.run();
                }
                long now = nanoClock.getAsLong();
                long wake = dispatcher.advance(now);
                if (dispatcher.finished(now)) {
                    finished.complete(dispatcher.result());
                    return;
                }
                if (mailbox.isEmpty()) {
                    // an answer posted after this check unparks the thread: park then returns at once
                    LockSupport.parkNanos(this, wake == Long.MAX_VALUE ? Long.MAX_VALUE : wake - now);
                }
            }
        } catch (RuntimeException | Error e) {
            finished.completeExceptionally(e);
        }
    }

    private void send(int id, URI target, Duration timeout) {
        HttpRequest request = HttpRequest.newBuilder(infer(target)).timeout(timeout)
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        http.sendAsync(request, HttpResponse.BodyHandlers.discarding()).whenComplete((response, error) -> {
            long now = nanoClock.getAsLong();
            if (error == null) {
                post(() -> dispatcher.answered(id, response.statusCode(), now));
            } else {
                post(() -> dispatcher.failed(id, failure(error)));
            }
        });
    }

    private static URI infer(URI target) {
        String base = target.toString();
        return URI.create((base.endsWith("/") ? base.substring(0, base.length() - 1) : base) + "/infer");
    }

    private static Outcome.Failure failure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof HttpTimeoutException) {
            return Outcome.Failure.TIMEOUT;
        }
        return cause instanceof ConnectException ? Outcome.Failure.REFUSED : Outcome.Failure.ERROR;
    }
}
