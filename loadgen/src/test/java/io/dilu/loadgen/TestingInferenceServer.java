package io.dilu.loadgen;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An inference server on a free loopback port for the load generator's tests: {@code POST /infer} is answered
 * 200 after a delay, once the server has received a given number of requests (or been released).
 */
public final class TestingInferenceServer implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService handlers = Executors.newVirtualThreadPerTaskExecutor();
    private final AtomicInteger received = new AtomicInteger();
    private final CountDownLatch released = new CountDownLatch(1);
    private final int holdUntil;
    private final Duration delay;

    /** Answers each request after {@code delay}. */
    public static TestingInferenceServer answeringAfter(Duration delay) throws IOException {
        return new TestingInferenceServer(delay, 0);
    }

    /** Answers nothing until it has received {@code requests} requests, then everything. */
    public static TestingInferenceServer holdingUntil(int requests) throws IOException {
        return new TestingInferenceServer(Duration.ZERO, requests);
    }

    /** Answers nothing until {@link #release()} or {@link #close()}. */
    public static TestingInferenceServer holding() throws IOException {
        return new TestingInferenceServer(Duration.ZERO, Integer.MAX_VALUE);
    }

    private TestingInferenceServer(Duration delay, int holdUntil) throws IOException {
        this.delay = delay;
        this.holdUntil = holdUntil;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(handlers);
        server.createContext("/infer", this::infer);
        server.start();
    }

    private void infer(HttpExchange exchange) throws IOException {
        try (exchange) {
            exchange.getRequestBody().readAllBytes();
            if (received.incrementAndGet() >= holdUntil) {
                release();
            }
            if (!released.await(2, TimeUnit.MINUTES)) {
                return;
            }
            Thread.sleep(delay);
            byte[] body = "{\"latency_ms\":1.0}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** Requests received so far. */
    public int received() {
        return received.get();
    }

    public void release() {
        released.countDown();
    }

    @Override
    public void close() {
        release();
        server.stop(0);
        handlers.shutdownNow();
    }
}
