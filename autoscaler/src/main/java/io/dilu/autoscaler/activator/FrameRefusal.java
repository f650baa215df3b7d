package io.dilu.autoscaler.activator;

/**
 * Why a message on the activator's websocket was dropped: the {@code reason} tag of
 * {@code dilu_autoscaler_activator_frames_refused_total}. Few and fixed, so the metric's cardinality does not grow
 * with what senders send.
 */
enum FrameRefusal {
    /** Over {@code dilu.autoscaler.activator.max-frame-bytes}. */
    TOO_LARGE("too-large"),
    /** A text message: the activator sends binary ones only. */
    TEXT("text"),
    /** Not a protobuf {@code WireStatMessages}, or cut short. */
    MALFORMED("malformed"),
    /** More messages than {@code dilu.autoscaler.activator.max-messages-per-frame}. */
    TOO_MANY("too-many"),
    /** A namespace, revision or pod name that Kubernetes does not allow. */
    BAD_NAME("bad-name"),
    /** A count that is not finite, below 0 or above {@code dilu.autoscaler.activator.max-value}. */
    IMPLAUSIBLE("implausible"),
    /** A stat that names another activator pod than the one the connection comes from. */
    WRONG_POD("wrong-pod"),
    /** Over the connection's budget of frames or bytes per second: dropped unread. */
    RATE_LIMITED("rate-limited"),
    /** The connection's source is no longer a running activator pod; the connection is closed. */
    NOT_AN_ACTIVATOR("not-an-activator"),
    /** Received after this replica stopped leading; the connection is closed so that the activator finds the leader. */
    NOT_LEADER("not-leader");

    private final String reason;

    FrameRefusal(String reason) {
        this.reason = reason;
    }

    /** The metric tag's value. */
    String reason() {
        return reason;
    }
}
