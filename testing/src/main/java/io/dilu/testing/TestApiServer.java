package io.dilu.testing;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real kube-apiserver ({@link RealApiServer}) for one test class, registered as a static {@code @RegisterExtension}
 * field: started with its namespaces before the class's {@code @BeforeAll} methods run, closed after its
 * {@code @AfterAll} ones (which stop the processes that talk to it first).
 */
public final class TestApiServer implements BeforeAllCallback, AfterAllCallback {

    /** Where the processes a test starts write their logs: kept after the run, for whoever reads a failure. */
    public static final Path LOGS = Path.of("target", "it-logs");

    private final Map<String, Map<String, String>> namespaces = new LinkedHashMap<>();
    private RealApiServer api;

    private TestApiServer() {}

    /** An API server with these namespaces, unlabelled. */
    public static TestApiServer withNamespaces(String... names) {
        TestApiServer server = new TestApiServer();
        for (String name : names) {
            server.namespaces.put(name, Map.of());
        }
        return server;
    }

    /** One more namespace, with labels. */
    public TestApiServer namespace(String name, Map<String, String> labels) {
        namespaces.put(name, labels);
        return this;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        Files.createDirectories(LOGS);
        api = RealApiServer.start();
        namespaces.forEach(api::createNamespace);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (api != null) {
            api.close();
        }
    }

    public RealApiServer api() {
        return api;
    }

    public KubernetesClient client() {
        return api.client();
    }
}
