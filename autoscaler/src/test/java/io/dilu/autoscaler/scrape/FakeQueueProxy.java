package io.dilu.autoscaler.scrape;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A queue-proxy on its own loopback address (as pods have their own IPs) that answers every scrape as its test
 * says, at the level of bytes on a raw socket: a Stat, garbage, or what a hostile tenant could make it send. It
 * records what it wrote and whether the client hung up on it (a write failed) before it was done.
 */
public final class FakeQueueProxy implements AutoCloseable {

    /** What the fake writes once it has read a request's head. */
    public interface Answer {
        void write(OutputStream out) throws IOException, InterruptedException;
    }

    private final ServerSocket server;
    private final Answer answer;
    private final AtomicLong written = new AtomicLong();
    private final CountDownLatch clientGone = new CountDownLatch(1);
    private volatile boolean finished;

    private FakeQueueProxy(ServerSocket server, Answer answer) {
        this.server = server;
        this.answer = answer;
    }

    public static FakeQueueProxy start(String ip, int port, Answer answer) throws IOException {
        ServerSocket server = new ServerSocket();
        server.bind(new InetSocketAddress(ip, port));
        FakeQueueProxy fake = new FakeQueueProxy(server, answer);
        Thread.ofPlatform().daemon().name("fake-queue-proxy-" + ip).start(fake::accept);
        return fake;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                Thread.ofPlatform().daemon().start(() -> serve(s));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            skipRequestHead(socket.getInputStream());
            OutputStream out = new OutputStream() {
                final OutputStream raw = socket.getOutputStream();

                @Override
                public void write(int b) throws IOException {
                    raw.write(b);
                    raw.flush();
                    written.incrementAndGet();
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    raw.write(b, off, len);
                    raw.flush();
                    written.addAndGet(len);
                }
            };
            answer.write(out);
            finished = true;
        } catch (IOException e) {
            clientGone.countDown();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void skipRequestHead(InputStream in) throws IOException {
        int matched = 0;
        byte[] end = "\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        while (matched < end.length) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("request cut short");
            }
            matched = b == end[matched] ? matched + 1 : b == end[0] ? 1 : 0;
        }
    }

    /** Bytes of the answer written so far, over every connection. */
    long written() {
        return written.get();
    }

    /** Whether some answer was written to its end. */
    boolean finished() {
        return finished;
    }

    /** Waits for the client to hang up on an answer still being written. */
    boolean clientGone(Duration atMost) throws InterruptedException {
        return clientGone.await(atMost.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    public static Answer ok(byte[] body) {
        return out -> {
            out.write(head(200, "Content-Length: " + body.length));
            out.write(body);
        };
    }

    /** The body in chunks of {@code chunk} bytes (Transfer-Encoding: chunked). */
    static Answer chunked(byte[] body, int chunk) {
        return out -> {
            out.write(head(200, "Transfer-Encoding: chunked"));
            for (int at = 0; at < body.length; at += chunk) {
                int n = Math.min(chunk, body.length - at);
                out.write(ascii(Integer.toHexString(n) + "\r\n"));
                out.write(body, at, n);
                out.write(ascii("\r\n"));
            }
            out.write(ascii("0\r\n\r\n"));
        };
    }

    static Answer status(int code) {
        return out -> out.write(head(code, "Content-Length: 0"));
    }

    /** {@code size} bytes of body, announced by Content-Length or chunked, made as they are sent. */
    static Answer huge(long size, boolean announced) {
        byte[] block = new byte[64 * 1024];
        return out -> {
            out.write(head(200, announced ? "Content-Length: " + size : "Transfer-Encoding: chunked"));
            for (long sent = 0; sent < size; sent += block.length) {
                int n = (int) Math.min(block.length, size - sent);
                if (!announced) {
                    out.write(ascii(Integer.toHexString(n) + "\r\n"));
                }
                out.write(block, 0, n);
                if (!announced) {
                    out.write(ascii("\r\n"));
                }
            }
            if (!announced) {
                out.write(ascii("0\r\n\r\n"));
            }
        };
    }

    /** A status line, then header lines until {@code size} bytes are sent, and never the blank line. */
    static Answer headersForever(long size) {
        byte[] line = ascii("X-Filler: " + "a".repeat(1000) + "\r\n");
        return out -> {
            out.write(ascii("HTTP/1.1 200 OK\r\n"));
            for (long sent = 0; sent < size; sent += line.length) {
                out.write(line);
            }
        };
    }

    /** Another protocol's greeting, then a line every second for as long as the client stays. */
    static Answer notHttp() {
        return out -> {
            out.write(ascii("SSH-2.0-OpenSSH_9.6\r\n"));
            for (int i = 0; i < 600; i++) {
                Thread.sleep(1000);
                out.write(ascii("still here\r\n"));
            }
        };
    }

    /** A body of one byte per {@code every} for {@code duration}, announced in full at the start. */
    static Answer trickle(Duration duration, Duration every) {
        long bytes = duration.toMillis() / every.toMillis();
        return out -> {
            out.write(head(200, "Content-Length: " + bytes));
            for (long i = 0; i < bytes; i++) {
                out.write(0);
                Thread.sleep(every);
            }
        };
    }

    /** A head announcing 100 bytes, ten of them, and the connection closed. */
    static Answer cutShort() {
        return out -> {
            out.write(head(200, "Content-Length: 100"));
            out.write(new byte[10]);
        };
    }

    private static byte[] head(int status, String framing) {
        return ascii("HTTP/1.1 " + status + " X\r\nContent-Type: application/protobuf\r\n" + framing + "\r\n\r\n");
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
