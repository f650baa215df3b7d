package io.dilu.autoscaler.activator;

import io.dilu.autoscaler.activator.ActivatorFrames.Accepted;
import io.dilu.autoscaler.activator.ActivatorFrames.Decoded;
import io.dilu.autoscaler.activator.ActivatorFrames.Refused;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.http.WebSocketFrame;
import org.jboss.logging.Logger;

/**
 * One activator's websocket. Its websocket frames are put together into whole messages here rather than by Vert.x,
 * so that a message over the bound is counted and its bytes past the bound are never held; a text message is counted
 * and not held at all. A whole message beyond the connection's budget of frames and bytes per second is dropped
 * unread; the others go to the server. After {@code refusedBeforeClose} refused ones in a row (the budget's aside) the
 * connection is closed (1008, policy violation), as it is at once when its address no longer belongs to its activator
 * pod; one that arrives after this replica stopped leading closes it at once (1012, service restart: Knative's word
 * for "reconnect").
 *
 * <p>All of it runs on the connection's I/O thread, one frame after the other.
 */
final class ActivatorConnection {

    private static final Logger LOG = Logger.getLogger(ActivatorConnection.class);

    private final ServerWebSocket ws;
    private final ActivatorStatsServer server;
    private final String address;
    private final ActivatorSender sender;
    private final ActivatorFrames.Bounds bounds;
    private final int refusedBeforeClose;
    private final FrameBudget budget;
    /** Whether the message being received is a text one. */
    private boolean text;
    /** Its bytes so far, counted past the bound too. */
    private long size;
    /** Its content, while binary and within the bound; null otherwise. */
    private Buffer message;
    private int refusedInARow;

    ActivatorConnection(ServerWebSocket ws, ActivatorStatsServer server, String address, ActivatorSender sender,
            ActivatorFrames.Bounds bounds, int refusedBeforeClose, FrameBudget budget) {
        this.ws = ws;
        this.server = server;
        this.address = address;
        this.sender = sender;
        this.bounds = bounds;
        this.refusedBeforeClose = refusedBeforeClose;
        this.budget = budget;
    }

    void start() {
        ws.closeHandler(v -> server.closed());
        ws.exceptionHandler(this::failed);
        // Vert.x answers pings and close frames itself; only data frames (text, binary, continuation) come here.
        ws.frameHandler(this::frame);
    }

    private void frame(WebSocketFrame frame) {
        if (ws.isClosed()) {
            return;
        }
        if (!frame.isContinuation()) {
            text = frame.isText();
            size = 0;
            message = text ? null : Buffer.buffer();
        }
        Buffer data = frame.binaryData();
        size += data.length();
        if (message != null) {
            if (size > bounds.maxBytes()) {
                message = null; // the rest is counted, not kept
            } else {
                message.appendBuffer(data);
            }
        }
        if (!frame.isFinal()) {
            return;
        }
        Decoded decoded;
        if (text) {
            decoded = server.refuse(new Refused(FrameRefusal.TEXT, "a frame must be binary (a WireStatMessages), got text of "
                    + size + " bytes"));
        } else if (message == null) {
            decoded = server.refuse(ActivatorFrames.tooLarge(size, bounds));
        } else if (!budget.take(size, server.now())) {
            server.refuse(new Refused(FrameRefusal.RATE_LIMITED, "over the budget of frames or bytes per second of "
                    + sender));
            message = null;
            return; // neither a refusal in a row nor a good frame: the sender may be an activator in a burst
        } else {
            decoded = server.received(message.getBytes(), address, sender);
        }
        message = null;
        after(decoded);
    }

    private void after(Decoded decoded) {
        switch (decoded) {
            case Accepted a -> refusedInARow = 0;
            case Refused r when r.reason() == FrameRefusal.NOT_LEADER -> {
                LOG.infof("closing the activator websocket from %s: this replica no longer leads", ws.remoteAddress());
                ws.close((short) WebSocketCloseStatus.SERVICE_RESTART.code(), "not the leader: reconnect");
            }
            case Refused r when r.reason() == FrameRefusal.NOT_AN_ACTIVATOR -> {
                LOG.warnf("closing the websocket from %s: %s", ws.remoteAddress(), r.detail());
                ws.close((short) WebSocketCloseStatus.POLICY_VIOLATION.code(), "not an activator pod");
            }
            case Refused r -> {
                if (++refusedInARow >= refusedBeforeClose) {
                    LOG.warnf("closing the websocket from %s after %d refused frames in a row; the last: %s (%s)",
                            ws.remoteAddress(), refusedInARow, r.detail(), r.reason().reason());
                    ws.close((short) WebSocketCloseStatus.POLICY_VIOLATION.code(), "refused frames");
                }
            }
        }
    }

    /**
     * A failure below the frames. A single websocket frame over the bound is refused by the decoder underneath (the
     * server's frame size is the bound), which closes the connection with 1009; it is counted as a frame too large.
     */
    private void failed(Throwable t) {
        if (t instanceof CorruptedWebSocketFrameException c && c.closeStatus() != null
                && c.closeStatus().code() == WebSocketCloseStatus.MESSAGE_TOO_BIG.code()) {
            server.refuse(new Refused(FrameRefusal.TOO_LARGE, "a frame must be at most " + bounds.maxBytes() + " bytes, got a "
                    + "single websocket frame over it"));
            return;
        }
        LOG.debugf("activator websocket from %s: %s", ws.remoteAddress(), t);
    }
}
