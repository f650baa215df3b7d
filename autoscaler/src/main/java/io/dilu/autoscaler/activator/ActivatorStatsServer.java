package io.dilu.autoscaler.activator;

import io.dilu.autoscaler.activator.ActivatorFrames.Accepted;
import io.dilu.autoscaler.activator.ActivatorFrames.Decoded;
import io.dilu.autoscaler.activator.ActivatorFrames.Refused;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import jakarta.inject.Singleton;
import java.time.InstantSource;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * Receives the stats of Knative's activator, as Knative's own autoscaler does: a websocket at {@code /} of its own port
 * ({@link ActivatorStatsListener}), whose binary messages are protobuf {@code WireStatMessages}; a kubelet probe on
 * {@code /} is answered 200 without an upgrade. It is how a revision at zero wakes up, so this autoscaler can take the
 * place of Knative's as the {@code autoscaler} Service in {@code knative-serving}.
 *
 * <p>The owner configures it once: {@link #senders} (which source addresses are activators), {@link #accept} (which
 * revisions are kept), {@link #accepting} (whether this replica leads) and {@link #onActivity} (told of a revision with
 * requests). Until then it fails closed: upgrades are refused and nothing is kept. An upgrade from an address that is
 * not a running activator pod's is answered 403. A replica that does not lead answers an upgrade 503, and closes a
 * connection that sends after it stopped leading, so that the activator, which reconnects with backoff through the
 * Service, lands on the leader.
 */
@Singleton
public class ActivatorStatsServer {

    private static final Logger LOG = Logger.getLogger(ActivatorStatsServer.class);
    /** Where Knative's activator connects: the Service's root. */
    static final String PATH = "/";

    /** Why an upgrade was refused: the {@code reason} tag of {@code dilu_autoscaler_activator_upgrades_refused_total}. */
    enum UpgradeRefusal {
        /** The source address is not a running activator pod's (403). */
        NOT_AN_ACTIVATOR("not-an-activator"),
        /** This replica does not lead (503). */
        NOT_LEADER("not-leader"),
        /** {@code max-connections} are open (503). */
        TOO_MANY("too-many");

        private final String reason;

        UpgradeRefusal(String reason) {
            this.reason = reason;
        }
    }

    private final ActivatorFrames.Bounds frameBounds;
    private final ActivatorStats stats;
    private final InstantSource clock;
    private final int maxConnections;
    private final int refusedFramesBeforeClose;
    private final int maxFramesPerSecond;
    private final int maxBytesPerSecond;
    private final AtomicInteger open = new AtomicInteger();
    private final Counter frames;
    private final Map<FrameRefusal, Counter> refused = new EnumMap<>(FrameRefusal.class);
    private final Map<UpgradeRefusal, Counter> upgradesRefused = new EnumMap<>(UpgradeRefusal.class);
    private final Counter stored;
    private final Counter unknown;
    private volatile Function<String, Optional<ActivatorSender>> senders = address -> Optional.empty();
    private volatile Predicate<RevisionKey> known = revision -> false;
    private volatile Consumer<RevisionKey> activity = revision -> { };
    private volatile BooleanSupplier accepting = () -> false;

    ActivatorStatsServer(ActivatorConfig config, MeterRegistry metrics, InstantSource clock) {
        if (config.maxConnections() < 1) {
            throw new IllegalArgumentException(
                    "dilu.autoscaler.activator.max-connections must be at least 1, got " + config.maxConnections());
        }
        if (config.refusedFramesBeforeClose() < 1) {
            throw new IllegalArgumentException("dilu.autoscaler.activator.refused-frames-before-close must be at least 1, got "
                    + config.refusedFramesBeforeClose());
        }
        if (config.maxFramesPerSecond() < 1) {
            throw new IllegalArgumentException("dilu.autoscaler.activator.max-frames-per-second must be at least 1, got "
                    + config.maxFramesPerSecond());
        }
        if (config.maxBytesPerSecond() < config.maxFrameBytes()) {
            throw new IllegalArgumentException("dilu.autoscaler.activator.max-bytes-per-second must be at least "
                    + "max-frame-bytes (" + config.maxFrameBytes() + "), got " + config.maxBytesPerSecond());
        }
        this.frameBounds = new ActivatorFrames.Bounds(config.maxFrameBytes(), config.maxMessagesPerFrame(), config.maxValue());
        // The owner's predicate and listener are read at each use: they are set after this bean is built.
        this.stats = new ActivatorStats(
                new ActivatorStats.Bounds(config.maxActivatorsPerRevision(), config.freshness(), config.maxAge(),
                        config.maxRevisionConcurrency(), config.maxRevisionRps()),
                revision -> known.test(revision), revision -> activity.accept(revision));
        this.clock = clock;
        this.maxConnections = config.maxConnections();
        this.refusedFramesBeforeClose = config.refusedFramesBeforeClose();
        this.maxFramesPerSecond = config.maxFramesPerSecond();
        this.maxBytesPerSecond = config.maxBytesPerSecond();
        this.frames = Counter.builder("dilu_autoscaler_activator_frames_total")
                .description("websocket messages received from activators").register(metrics);
        for (FrameRefusal r : FrameRefusal.values()) {
            refused.put(r, Counter.builder("dilu_autoscaler_activator_frames_refused_total")
                    .description("activator frames dropped, by reason").tag("reason", r.reason()).register(metrics));
        }
        for (UpgradeRefusal r : UpgradeRefusal.values()) {
            upgradesRefused.put(r, Counter.builder("dilu_autoscaler_activator_upgrades_refused_total")
                    .description("activator websocket upgrades refused, by reason").tag("reason", r.reason).register(metrics));
        }
        this.stored = statsCounter(metrics, "stored");
        this.unknown = statsCounter(metrics, "unknown-revision");
        Gauge.builder("dilu_autoscaler_activator_connections", open, AtomicInteger::get)
                .description("open websocket connections from activators").register(metrics);
        Gauge.builder("dilu_autoscaler_activator_revisions", stats, ActivatorStats::revisions)
                .description("revisions with activator stats kept").register(metrics);
    }

    private static Counter statsCounter(MeterRegistry metrics, String result) {
        return Counter.builder("dilu_autoscaler_activator_stats_total")
                .description("revision stats in accepted activator frames, by what became of them").tag("result", result)
                .register(metrics);
    }

    /** The activator's stats, for the autoscaling tick. */
    public ActivatorStats stats() {
        return stats;
    }

    /**
     * Who is at a source address: a running activator pod ({@link ActivatorPods#at}), or anyone when authentication is
     * off; empty refuses the upgrade (403), and a connection whose answer changes is closed. Asked at every upgrade and
     * every frame, on the websocket's I/O thread: it must answer at once.
     */
    public void senders(Function<String, Optional<ActivatorSender>> senders) {
        this.senders = Objects.requireNonNull(senders, "senders");
    }

    /** Which revisions' stats are kept (the others are dropped): those a PodAutoscaler of this class exists for. */
    public void accept(Predicate<RevisionKey> known) {
        this.known = Objects.requireNonNull(known, "known");
    }

    /** Whether this replica takes connections and frames: whether it holds the Lease. */
    public void accepting(BooleanSupplier accepting) {
        this.accepting = Objects.requireNonNull(accepting, "accepting");
    }

    /**
     * Told of each kept revision for which a frame shows concurrency or requests: poke its scaler. It runs on the
     * websocket's I/O thread and must return at once; see {@link ActivatorStats#ActivatorStats}.
     */
    public void onActivity(Consumer<RevisionKey> listener) {
        this.activity = Objects.requireNonNull(listener, "listener");
    }

    /** Every request to the activator's port. */
    void handle(HttpServerRequest request) {
        if (!PATH.equals(request.path()) || !HttpMethod.GET.equals(request.method())) {
            request.response().setStatusCode(404).end();
            return;
        }
        if (kubeletProbe(request)) {
            request.response().setStatusCode(200).end();
            return;
        }
        if (!request.headers().contains(HttpHeaders.UPGRADE, HttpHeaders.WEBSOCKET, true)) {
            request.response().setStatusCode(404).end();
            return;
        }
        String address = request.remoteAddress() == null ? "" : request.remoteAddress().hostAddress();
        Optional<ActivatorSender> sender = senderAt(address);
        if (sender.isEmpty()) {
            upgradesRefused.get(UpgradeRefusal.NOT_AN_ACTIVATOR).increment();
            LOG.debugf("activator websocket from %s refused: not the address of a running activator pod", address);
            request.response().setStatusCode(403).end("not an activator pod");
            return;
        }
        if (!leads()) {
            upgradesRefused.get(UpgradeRefusal.NOT_LEADER).increment();
            request.response().setStatusCode(503).end("not the leading autoscaler replica");
            return;
        }
        if (open.incrementAndGet() > maxConnections) {
            open.decrementAndGet();
            upgradesRefused.get(UpgradeRefusal.TOO_MANY).increment();
            LOG.warnf("activator websocket from %s refused: %d connections are open already", address, maxConnections);
            request.response().setStatusCode(503).end("too many activator connections");
            return;
        }
        request.toWebSocket().onComplete(upgrade -> {
            if (upgrade.succeeded()) {
                LOG.debugf("activator websocket from %s (%s)", address, sender.get());
                new ActivatorConnection(upgrade.result(), this, address, sender.get(), frameBounds, refusedFramesBeforeClose,
                        new FrameBudget(maxFramesPerSecond, maxBytesPerSecond, clock.instant())).start();
            } else {
                open.decrementAndGet();
                LOG.debugf("activator websocket upgrade from %s failed: %s", address, upgrade.cause());
            }
        });
    }

    /** Who is at the address, as the owner's function says; nobody when it throws. */
    private Optional<ActivatorSender> senderAt(String address) {
        try {
            return Objects.requireNonNullElse(senders.apply(address), Optional.empty());
        } catch (RuntimeException e) {
            LOG.errorf(e, "looking up the activator at %s failed; refused", address);
            return Optional.empty();
        }
    }

    /** As Knative tells a kubelet probe: its header, or the kubelet's User-Agent. */
    private static boolean kubeletProbe(HttpServerRequest request) {
        String agent = request.getHeader(HttpHeaders.USER_AGENT);
        return request.getHeader("K-Kubelet-Probe") != null || agent != null && agent.startsWith("kube-probe/");
    }

    private boolean leads() {
        try {
            return accepting.getAsBoolean();
        } catch (RuntimeException e) {
            LOG.errorf(e, "the leadership check failed; activator stats are refused");
            return false;
        }
    }

    /**
     * A whole binary frame arrived from {@code sender} at {@code address}: decoded, checked, kept when accepted, and
     * counted. Refused without being read when this replica no longer leads, or the address no longer belongs to the
     * sender (its pod went: the connection is then closed).
     */
    Decoded received(byte[] frame, String address, ActivatorSender sender) {
        if (!leads()) {
            return refuse(new Refused(FrameRefusal.NOT_LEADER, "this replica no longer leads"));
        }
        if (!senderAt(address).equals(Optional.of(sender))) {
            return refuse(new Refused(FrameRefusal.NOT_AN_ACTIVATOR, address + " is no longer the address of " + sender));
        }
        Decoded decoded = ActivatorFrames.decode(frame, frameBounds, sender.pod());
        switch (decoded) {
            case Accepted a -> {
                frames.increment();
                ActivatorStats.Recorded r = stats.record(a.stats(), clock.instant());
                stored.increment(r.stored());
                unknown.increment(r.unknown());
            }
            case Refused r -> refuse(r);
        }
        return decoded;
    }

    /** The server's clock. */
    java.time.Instant now() {
        return clock.instant();
    }

    /** A frame refused whole, before or while decoding. */
    Refused refuse(Refused r) {
        frames.increment();
        refused.get(r.reason()).increment();
        LOG.debugf("activator frame refused (%s): %s", r.reason().reason(), r.detail());
        return r;
    }

    /** A connection ended, whichever way. */
    void closed() {
        open.decrementAndGet();
    }
}
