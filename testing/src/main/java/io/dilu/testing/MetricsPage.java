package io.dilu.testing;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads a component's metrics page the way Prometheus does: plain HTTP/1.1, the whole exchange bounded.
 *
 * <p>The JDK client's defaults are not that: it offers an h2c upgrade on plain HTTP, which Quarkus accepts, and
 * its request timeout ends when the headers arrive. Once, a test's read of the node agent's page over an upgraded
 * connection waited 13 minutes for a body that never came, its 10 s timeout long past. Here the deadline covers the
 * body too, and an exchange past it is cancelled.
 */
public final class MetricsPage {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private MetricsPage() {}

    /** The page at {@code uri}; an {@link IOException} when it does not come whole within {@code limit}. */
    public static String read(URI uri, Duration limit) throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<String>> answer = HTTP.sendAsync(HttpRequest.newBuilder(uri).timeout(limit).build(),
                HttpResponse.BodyHandlers.ofString());
        try {
            return answer.get(limit.toMillis(), TimeUnit.MILLISECONDS).body();
        } catch (TimeoutException e) {
            answer.cancel(true);
            throw new IOException(uri + " did not answer whole within " + limit, e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(uri + ": " + e.getCause(), e.getCause());
        }
    }
}
