package io.dilu.autoscaler.scrape;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ProtocolException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body read into memory up to a cap, and no further: past the cap the subscription is cancelled,
 * which closes the connection, so what a pod sends costs at most the cap whether it announces its length or
 * streams chunks. A status other than 200, or an announced length over the cap, is refused before any byte
 * of the body is read.
 */
final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {

    /** The body went over the cap ({@link ScrapeFailure#TOO_LARGE}). */
    static final class TooLarge extends IOException {
        TooLarge(long limit) {
            super("body over " + limit + " bytes");
        }
    }

    /** The status was not 200 ({@link ScrapeFailure#HTTP_STATUS}). */
    static final class WrongStatus extends IOException {
        WrongStatus(int status) {
            super("HTTP status " + status);
        }
    }

    private final int limit;
    private final CompletableFuture<byte[]> body = new CompletableFuture<>();
    private final ByteArrayOutputStream received = new ByteArrayOutputStream();
    private final IOException refused;
    private Flow.Subscription subscription;

    private CappedBody(int limit, IOException refused) {
        this.limit = limit;
        this.refused = refused;
    }

    /** Bodies of 200 answers up to {@code limit} bytes. */
    static HttpResponse.BodyHandler<byte[]> handler(int limit) {
        return info -> {
            if (info.statusCode() != 200) {
                return new CappedBody(limit, new WrongStatus(info.statusCode()));
            }
            OptionalLong length;
            try {
                length = info.headers().firstValueAsLong("Content-Length");
            } catch (NumberFormatException e) {
                return new CappedBody(limit, new ProtocolException("Content-Length is not a number"));
            }
            return new CappedBody(limit, length.isPresent() && length.getAsLong() > limit ? new TooLarge(limit) : null);
        };
    }

    @Override
    public CompletionStage<byte[]> getBody() {
        return body;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (refused != null) {
            fail(refused);
        } else {
            s.request(1);
        }
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
        // Signals may still arrive after a cancel; they are dropped.
        if (body.isDone()) {
            return;
        }
        long size = received.size();
        for (ByteBuffer b : buffers) {
            size += b.remaining();
        }
        if (size > limit) {
            fail(new TooLarge(limit));
            return;
        }
        for (ByteBuffer b : buffers) {
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            received.writeBytes(bytes);
        }
        subscription.request(1);
    }

    @Override
    public void onError(Throwable t) {
        body.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
        body.complete(received.toByteArray());
    }

    private void fail(IOException why) {
        subscription.cancel();
        body.completeExceptionally(why);
    }
}
