package io.dilu.testing;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.vertx.VertxHttpClientFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Kubernetes clients for tests and benches, which run outside Quarkus. On a Quarkus module's class path the HTTP
 * client factory fabric8 picks is Quarkus's: one Vert.x for every client it builds, closed only when Quarkus shuts
 * down, so its event loops (not daemons) outlive every client closed and keep a bench's JVM from ending. fabric8's own
 * factory gives each client a Vert.x of its own, closed with it.
 */
public final class KubeClients {

    private KubeClients() {}

    public static KubernetesClient of(Config config) {
        return new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new VertxHttpClientFactory()).build();
    }

    /** A client of the cluster a kubeconfig file names, as its user. */
    public static KubernetesClient fromKubeconfig(Path kubeconfig) throws IOException {
        return of(Config.fromKubeconfig(Files.readString(kubeconfig)));
    }
}
