package io.dilu.autoscaler.activator;

import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * Plays Knative's activator over a real websocket (the JDK's client): binary frames of WireStatMessages, and the
 * things no activator sends. It connects from a loopback address of its choice (127.0.0.0/8 is all the machine's), as
 * an activator pod connects from its pod's address. {@link #ended} completes with the close code the server sent, or
 * -1 when the connection broke without one.
 */
final class TestingActivator implements WebSocket.Listener, AutoCloseable {

    static final long PATIENCE_SECONDS = 30;
    /** One client per source address: each websocket still has its own TCP connection. */
    private static final Map<String, HttpClient> CLIENTS = new ConcurrentHashMap<>();

    final CompletableFuture<Integer> ended = new CompletableFuture<>();
    private final WebSocket ws;

    private TestingActivator(URI uri, String from) throws Exception {
        HttpClient client = CLIENTS.computeIfAbsent(from, a -> {
            try {
                return HttpClient.newBuilder().localAddress(InetAddress.getByName(a)).build();
            } catch (java.net.UnknownHostException e) {
                throw new IllegalArgumentException(e);
            }
        });
        this.ws = client.newWebSocketBuilder().buildAsync(uri, this).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }

    /**
     * Connects from the loopback address {@code from}; fails as the handshake fails (a {@code
     * WebSocketHandshakeException} for a refused upgrade).
     */
    static TestingActivator connect(URI uri, String from) throws Exception {
        return new TestingActivator(uri, from);
    }

    void send(byte[] frame) throws Exception {
        ws.sendBinary(ByteBuffer.wrap(frame), true).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }

    /** One message in websocket frames of at most {@code frameBytes}, as gorilla/websocket splits a large one. */
    void sendInFrames(byte[] message, int frameBytes) throws Exception {
        for (int from = 0; from < message.length; from += frameBytes) {
            int to = Math.min(message.length, from + frameBytes);
            ws.sendBinary(ByteBuffer.wrap(message, from, to - from), to == message.length)
                    .get(PATIENCE_SECONDS, TimeUnit.SECONDS);
        }
    }

    void sendText(String text) throws Exception {
        ws.sendText(text, true).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }

    int endedWith() throws Exception {
        return ended.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
        ended.complete(statusCode);
        return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        ended.complete(-1);
    }

    @Override
    public void close() {
        ws.abort();
    }
}
