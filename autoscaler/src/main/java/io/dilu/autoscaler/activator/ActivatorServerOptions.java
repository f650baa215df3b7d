package io.dilu.autoscaler.activator;

import io.quarkus.vertx.http.HttpServerOptionsCustomizer;
import io.vertx.core.http.HttpServerOptions;
import jakarta.inject.Singleton;

/**
 * The HTTP server's websocket limits, for the activator's websocket (the only one it serves). A single websocket
 * frame may be as large as the largest activator frame and no larger: above it the connection is closed before the
 * frame is read. Compression is off: a compressed frame under the bound could inflate far past it before any check,
 * and Knative's activator does not compress.
 */
@Singleton
class ActivatorServerOptions implements HttpServerOptionsCustomizer {

    private final ActivatorConfig config;

    ActivatorServerOptions(ActivatorConfig config) {
        this.config = config;
    }

    @Override
    public void customizeHttpServer(HttpServerOptions options) {
        limit(options);
    }

    @Override
    public void customizeHttpsServer(HttpServerOptions options) {
        limit(options);
    }

    private void limit(HttpServerOptions options) {
        options.setMaxWebSocketFrameSize(config.maxFrameBytes());
        options.setMaxWebSocketMessageSize(config.maxFrameBytes());
        options.setPerMessageWebSocketCompressionSupported(false);
        options.setPerFrameWebSocketCompressionSupported(false);
    }
}
