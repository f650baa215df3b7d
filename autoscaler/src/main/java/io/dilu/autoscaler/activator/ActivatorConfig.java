package io.dilu.autoscaler.activator;

import io.dilu.core.contract.KnativeNames;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/**
 * How the stats of Knative's activator are received ({@code dilu.autoscaler.activator.*}). A frame is one websocket
 * message, a protobuf {@code WireStatMessages}; a message is one {@code WireStatMessage} in it, one revision's stat.
 */
@ConfigMapping(prefix = "dilu.autoscaler.activator")
public interface ActivatorConfig {

    /**
     * The port the activator's websocket is served on, in {@code replace} mode only (0: any free port), apart from the
     * HTTP port (metrics, health) so that a NetworkPolicy can open this one to the activators alone. Knative's activator
     * dials port 8080 of the {@code autoscaler} Service.
     */
    @WithDefault("8080")
    int port();

    /**
     * Who may send stats. {@code activator-pod}: a connection is taken only from the address of a running activator pod
     * (per the API server: {@link #podLabel()} in the Knative namespace, not on the host's network), and each of its
     * stats must name that pod. {@code none}: from anyone who reaches the port (behind a mesh sidecar, which hides the
     * source address: let the mesh's authorization admit only the activator's identity).
     */
    @WithDefault("activator-pod")
    Authentication authentication();

    /** See {@link #authentication()}. */
    enum Authentication {
        ACTIVATOR_POD, NONE
    }

    /** The label ({@code key=value}) that marks Knative's activator pods in the Knative namespace. */
    @WithDefault(KnativeNames.ACTIVATOR_POD_LABEL)
    String podLabel();

    /**
     * Frames one connection may send per second (at least 1), as a budget refilled continuously and holding at most one
     * second's worth; a frame beyond it is dropped unread. Knative's activator sends one frame a second, and one more per
     * revision whose first request it saw in that second.
     */
    @WithDefault("100")
    int maxFramesPerSecond();

    /**
     * Bytes one connection may send per second in frames (at least {@code max-frame-bytes}), on the same budget. About
     * 100 bytes per revision and second; the default is four full frames a second.
     */
    @WithDefault("4194304")
    int maxBytesPerSecond();

    /**
     * The most concurrency believed of all activators together for one revision (positive): a reading's sum is clipped
     * to it. Knative's activator queues at most 10,000 requests of a revision before it answers 503 (its throttler's
     * {@code breakerQueueDepth}), and is sized for 100 in flight each ({@code activator-capacity}).
     */
    @WithDefault("10000")
    double maxRevisionConcurrency();

    /**
     * The most requests per second believed of all activators together for one revision (positive): a reading's sum is
     * clipped to it. The same figure as {@code max-pod-rps}, which is believed of one instance.
     */
    @WithDefault("100000")
    double maxRevisionRps();

    /**
     * The largest frame (1024..16777216 bytes); a larger one is dropped and counted. The activator sends one frame a
     * second with a stat of about 100 bytes per revision it proxies for: 1 MiB is some ten thousand revisions. Each
     * open connection may hold this much while a frame arrives.
     */
    @WithDefault("1048576")
    int maxFrameBytes();

    /** The most messages in one frame (at least 1): one per revision the activator proxied for in that second. */
    @WithDefault("10000")
    int maxMessagesPerFrame();

    /**
     * The highest concurrency or request count (per one-second period) believed of one activator pod for one revision;
     * above it, or NaN, infinite or negative, the frame is refused. Above {@code max-pod-rps} (one instance) because
     * one activator holds the requests of all of a revision's instances while it buffers them; an activator proxies
     * some tens of thousands of requests per second at most, so 1,000,000 refuses nothing real.
     */
    @WithDefault("1000000")
    double maxValue();

    /**
     * How old an activator pod's latest report may be and still count (positive). The activator reports every second
     * while it has requests for a revision; a few seconds tolerate one late report and soon forget an activator that
     * went away.
     */
    @WithDefault("3s")
    Duration freshness();

    /** How long a report is kept at all (at least the freshness), so that when the last one arrived stays known. */
    @WithDefault("60s")
    Duration maxAge();

    /**
     * The most activator pods kept per revision (at least 1); a new one pushes out the one heard from longest ago.
     * Knative runs a few activators (its autoscaling of the activator stops at 20 by default).
     */
    @WithDefault("32")
    int maxActivatorsPerRevision();

    /**
     * The most websocket connections open at once (at least 1); a further upgrade is answered 503. Each activator
     * pod keeps one. Bounds what frames being received may hold: this times {@code max-frame-bytes}.
     */
    @WithDefault("64")
    int maxConnections();

    /** Refused frames in a row after which a connection is closed (at least 1): its sender is not an activator. */
    @WithDefault("10")
    int refusedFramesBeforeClose();
}
