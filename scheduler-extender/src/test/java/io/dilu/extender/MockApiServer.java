package io.dilu.extender;

import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;

/**
 * fabric8's mock API server for the extender under test: it keeps what is created (so the extender's informers
 * list and watch real objects) and answers set expectations first (a slow API server, for the bind timeout).
 * Fields annotated {@link Server} receive it.
 */
public class MockApiServer implements QuarkusTestResourceLifecycleManager {

    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.FIELD)
    public @interface Server {}

    private KubernetesMockServer server;

    @Override
    public Map<String, String> start() {
        Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
        // Named in full: QuarkusTestResourceLifecycleManager has a Context of its own.
        server = new KubernetesMockServer(new io.fabric8.mockwebserver.Context(), new MockWebServer(), responses,
                new KubernetesMixedDispatcher(responses), false);
        server.init();
        return Map.of("quarkus.kubernetes-client.api-server-url", server.url("/"),
                "quarkus.kubernetes-client.trust-certs", "true",
                "quarkus.log.category.\"io.fabric8.mockwebserver\".level", "WARN"); // a line per request otherwise
    }

    @Override
    public void inject(TestInjector injector) {
        injector.injectIntoFields(server, new TestInjector.AnnotatedAndMatchesType(Server.class, KubernetesMockServer.class));
    }

    @Override
    public void stop() {
        if (server != null) {
            server.destroy();
        }
    }
}
