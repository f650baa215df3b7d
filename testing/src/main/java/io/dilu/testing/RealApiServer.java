package io.dilu.testing;

import io.fabric8.kubeapitest.KubeAPIServer;
import io.fabric8.kubeapitest.KubeAPIServerConfigBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real kube-apiserver with its etcd, started from the local binaries that {@code e2e/bin/kube-binaries}
 * lays out in Dilu's cache, {@code $DILU_CACHE/kube-api-test} (fabric8 kube-api-test downloads nothing when they are
 * there). {@code DILU_CACHE} comes from {@code ./dilu} or Maven (the parent pom's {@code dilu.cache}), the same
 * directory the scripts use.
 *
 * <p>Each server gets a directory of its own for what kube-api-test and the API server write (certificates, the
 * serving key), with the shared binaries linked in read-only: two test runs on one machine never regenerate each
 * other's certificates. A start that fails stops what it started (etcd, the API server) and removes its directory.
 */
public final class RealApiServer implements AutoCloseable {

    /** The Kubernetes release of the binaries ({@link KubeRelease}). */
    public static final String VERSION = KubeRelease.version(root());

    private final KubeAPIServer server;
    private final KubernetesClient client;
    private final Path runDir;
    private final Thread onExit;

    private RealApiServer(KubeAPIServer server, KubernetesClient client, Path runDir, Thread onExit) {
        this.server = server;
        this.client = client;
        this.runDir = runDir;
        this.onExit = onExit;
    }

    public static RealApiServer start() {
        Path dir = kubeApiTestDir();
        if (!Files.isExecutable(binary(dir, "kube-apiserver")) || !Files.isExecutable(binary(dir, "kubectl"))) {
            throw new IllegalStateException("no kube-apiserver and kubectl " + VERSION + " under " + dir + " (DILU_CACHE="
                    + System.getenv("DILU_CACHE") + "); run ./dilu kube-binaries (./dilu test does it for you)");
        }
        Path runDir;
        try {
            runDir = Files.createTempDirectory("dilu-kube-api-");
            Files.createSymbolicLink(runDir.resolve("k8s"), dir.resolve("k8s").toAbsolutePath());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a directory for the API server's certificates", e);
        }
        KubeAPIServer server = new KubeAPIServer(KubeAPIServerConfigBuilder.anAPIServerConfig()
                .withTestDir(runDir.toString())
                .withApiServerVersion(VERSION)
                .withUpdateKubeConfig(false)
                .withStartupTimeout(120_000)
                .build());
        // A JVM that ends without close() (a test that threw in its setup) still stops etcd and the API server.
        Thread onExit = new Thread(() -> stop(server, runDir), "dilu-kube-api-stop");
        Runtime.getRuntime().addShutdownHook(onExit);
        try {
            server.start();
        } catch (RuntimeException e) {
            try {
                stop(server, runDir);
            } catch (RuntimeException whileStopping) {
                e.addSuppressed(whileStopping); // e.g. etcd never started, so it has no data to clean
            }
            Runtime.getRuntime().removeShutdownHook(onExit);
            throw e;
        }
        KubernetesClient client = KubeClients.of(Config.fromKubeconfig(server.getKubeConfigYaml()));
        return new RealApiServer(server, client, runDir, onExit);
    }

    private static void stop(KubeAPIServer server, Path runDir) {
        try {
            server.stop();
        } finally {
            deleteTree(runDir);
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            // The k8s link is removed as a link: walk does not follow it.
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // Nothing to delete, or already deleted: the directory is gone either way.
        }
    }

    /**
     * Creates a namespace and its default ServiceAccount: with no controller-manager running, nobody else does,
     * and the ServiceAccount admission plugin refuses pods without it.
     */
    public void createNamespace(String name, java.util.Map<String, String> labels) {
        client.namespaces().resource(new io.fabric8.kubernetes.api.model.NamespaceBuilder().withNewMetadata().withName(name)
                .withLabels(labels).endMetadata().build()).create();
        client.serviceAccounts().inNamespace(name).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder()
                .withNewMetadata().withName("default").endMetadata().build()).create();
    }

    /** Creates the CustomResourceDefinition in {@code yaml} and waits until the API server serves it. */
    public CustomResourceDefinition installCrd(Path yaml) throws IOException {
        CustomResourceDefinition crd;
        try (InputStream in = Files.newInputStream(yaml)) {
            crd = client.apiextensions().v1().customResourceDefinitions().load(in).item();
        }
        client.apiextensions().v1().customResourceDefinitions().resource(crd).create();
        return client.apiextensions().v1().customResourceDefinitions().withName(crd.getMetadata().getName())
                // A CRD just created may have a status without conditions yet: not established.
                .waitUntilCondition(c -> c != null && c.getStatus() != null && c.getStatus().getConditions() != null
                        && c.getStatus().getConditions().stream()
                        .anyMatch(cond -> "Established".equals(cond.getType()) && "True".equals(cond.getStatus())),
                        60, TimeUnit.SECONDS);
    }

    /** The kube-scheduler binary beside the API server's, from {@code e2e/bin/kube-binaries}. */
    public static Path kubeScheduler() {
        return laidOut("kube-scheduler");
    }

    /** The kubectl beside the API server's, from {@code e2e/bin/kube-binaries} (the one the local cluster uses too). */
    public static Path kubectl() {
        return laidOut("kubectl");
    }

    private static Path laidOut(String name) {
        Path p = binary(kubeApiTestDir(), name);
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException("no " + name + " at " + p + "; run ./dilu kube-binaries");
        }
        return p;
    }

    /** Where e2e/bin/kube-binaries lays the binaries out for kube-api-test; DILU_CACHE must be set, never guessed. */
    private static Path kubeApiTestDir() {
        String cache = System.getenv("DILU_CACHE");
        if (cache == null || cache.isBlank()) {
            throw new IllegalStateException("DILU_CACHE is not set: run the tests through ./dilu or Maven, which set it to "
                    + "the cache e2e/bin/kube-binaries fills");
        }
        return Path.of(cache, "kube-api-test");
    }

    private static Path binary(Path kubeApiTestDir, String name) {
        return kubeApiTestDir.resolve(Path.of("k8s", VERSION + "-linux-amd64", name));
    }

    /** Writes a kubeconfig for this API server (admin credentials) to {@code file}, for other processes. */
    public Path writeKubeconfig(Path file) throws IOException {
        Files.writeString(file, server.getKubeConfigYaml());
        return file;
    }

    /** The repository's root (system property {@code dilu.root}, set by the build). */
    public static Path root() {
        return Path.of(System.getProperty("dilu.root", ".."));
    }

    /** The project's manifests directory (system property {@code dilu.manifests}, set by the build). */
    public static Path manifests() {
        String configured = System.getProperty("dilu.manifests");
        return configured != null ? Path.of(configured) : root().resolve("manifests");
    }

    /**
     * Whether this (RBAC-enforcing) API server lets the service account {@code namespace/serviceAccount} do
     * {@code verb} on {@code resource} (with its subresource after a slash, e.g. {@code deployments/scale}) in
     * {@code namespace}.
     */
    public boolean allowed(String namespace, String serviceAccount, String verb, String group, String resource) {
        return grantedInNamespace(namespace, namespace, serviceAccount, verb, group, resource);
    }

    /** Whether the service account {@code accountNamespace/serviceAccount} may do {@code verb} on a resource in {@code namespace}. */
    public boolean grantedInNamespace(String namespace, String accountNamespace, String serviceAccount, String verb,
            String group, String resource) {
        String[] parts = resource.split("/", 2);
        SubjectAccessReview review = client.authorization().v1().subjectAccessReview().create(new SubjectAccessReviewBuilder()
                .withNewSpec().withUser("system:serviceaccount:" + accountNamespace + ":" + serviceAccount)
                .withGroups("system:serviceaccounts", "system:serviceaccounts:" + accountNamespace, "system:authenticated")
                .withNewResourceAttributes().withNamespace(namespace).withVerb(verb).withGroup(group)
                .withResource(parts[0]).withSubresource(parts.length > 1 ? parts[1] : null).endResourceAttributes()
                .endSpec().build());
        return review.getStatus().getAllowed();
    }

    public KubernetesClient client() {
        return client;
    }

    @Override
    public void close() {
        client.close();
        stop(server, runDir);
        try {
            Runtime.getRuntime().removeShutdownHook(onExit);
        } catch (IllegalStateException e) {
            // The JVM is already shutting down: the hook runs anyway, and stopping twice is harmless.
        }
    }
}
