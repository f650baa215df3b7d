package io.dilu.autoscaler.activator;

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
