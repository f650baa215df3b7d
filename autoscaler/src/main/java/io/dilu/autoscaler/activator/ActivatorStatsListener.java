package io.dilu.autoscaler.activator;

import io.dilu.autoscaler.AutoscalerConfig;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The activator's port: an HTTP server of its own, serving {@link ActivatorStatsServer} and nothing else, in {@code
 * replace} mode only. Apart from the HTTP port (metrics, health, which anyone may scrape) so that a NetworkPolicy can
 * open this one to Knative's activators alone.
 *
 * <p>A single websocket frame may be as large as the largest activator frame and no larger: above it the connection is
 * closed before the frame is read. Compression is off: a compressed frame under the bound could inflate far past it
 * before any check, and Knative's activator does not compress.
 */
@Singleton
public class ActivatorStatsListener {

    private static final Logger LOG = Logger.getLogger(ActivatorStatsListener.class);

    private final Vertx vertx;
    private final ActivatorStatsServer server;
    private final ActivatorConfig config;
    private final AutoscalerConfig autoscaler;
    private final String host;
    private volatile HttpServer listening;

    ActivatorStatsListener(Vertx vertx, ActivatorStatsServer server, ActivatorConfig config, AutoscalerConfig autoscaler,
            @ConfigProperty(name = "quarkus.http.host", defaultValue = "0.0.0.0") String host) {
        this.vertx = vertx;
        this.server = server;
        this.config = config;
        this.autoscaler = autoscaler;
        this.host = host;
    }

    void start(@Observes StartupEvent event) throws Exception {
        if (autoscaler.mode() != AutoscalerConfig.Mode.REPLACE) {
            return; // Knative's own autoscaler takes the activator's reports
        }
        if (config.port() < 0 || config.port() > 65535) {
            throw new IllegalArgumentException("dilu.autoscaler.activator.port must be 0..65535, got " + config.port());
        }
        HttpServerOptions options = new HttpServerOptions().setMaxWebSocketFrameSize(config.maxFrameBytes())
                .setMaxWebSocketMessageSize(config.maxFrameBytes()).setPerMessageWebSocketCompressionSupported(false)
                .setPerFrameWebSocketCompressionSupported(false);
        listening = vertx.createHttpServer(options).requestHandler(server::handle).listen(config.port(), host)
                .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        LOG.infof("activator stats on %s:%d (authentication: %s)", host, listening.actualPort(),
                config.authentication().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'));
    }

    /** The port listened on (the configured one, or the one chosen for 0); -1 when not listening. */
    public int port() {
        HttpServer s = listening;
        return s == null ? -1 : s.actualPort();
    }

    void stop(@Observes ShutdownEvent event) {
        HttpServer s = listening;
        if (s != null) {
            s.close();
        }
    }
}
