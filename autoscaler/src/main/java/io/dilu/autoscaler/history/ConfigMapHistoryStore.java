package io.dilu.autoscaler.history;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * The {@link HistoryStore} in the cluster: one ConfigMap per PodAutoscaler in the autoscaler's own namespace (the
 * Lease's, where tenants cannot write), named {@value #PREFIX} and the PodAutoscaler's UID, labelled {@value #LABEL}
 * and with the PodAutoscaler's namespace and name ({@value #PA_NAMESPACE_LABEL}, {@value #PA_NAME_LABEL}); the state's
 * text under {@value #KEY}. Read from a watch of those ConfigMaps; written and deleted on one thread of its own, in
 * the order asked, so that a tick never waits for the API server and a delete never overtakes a write.
 */
public final class ConfigMapHistoryStore implements HistoryStore {

    public static final String PREFIX = "dilu-history-";
    /** Marks the autoscaler's history ConfigMaps: the watch and {@link #owners()} see those only. */
    public static final String LABEL = "dilu.io/history";
    public static final String PA_NAMESPACE_LABEL = "dilu.io/podautoscaler-namespace";
    public static final String PA_NAME_LABEL = "dilu.io/podautoscaler-name";
    public static final String KEY = "state";

    private final KubernetesClient client;
    private final String namespace;
    private final SharedIndexInformer<ConfigMap> watch;
    private final ExecutorService writer = Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name("dilu-autoscaler-history").unstarted(r));

    public ConfigMapHistoryStore(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
        this.watch = client.configMaps().inNamespace(namespace).withLabel(LABEL).runnableInformer(0);
        watch.exceptionHandler((started, t) -> true);
    }

    /** The ConfigMap holding the state of the PodAutoscaler with this UID (UIDs are DNS subdomains already). */
    public static String name(String uid) {
        return PREFIX + uid;
    }

    @Override
    public boolean start(Duration wait) {
        try {
            watch.start().toCompletableFuture().get(wait.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public Optional<String> read(String uid) {
        ConfigMap cm = watch.getStore().getByKey(namespace + "/" + name(uid));
        return cm == null || cm.getData() == null ? Optional.empty() : Optional.ofNullable(cm.getData().get(KEY));
    }

    @Override
    public Set<String> owners() {
        return watch.getStore().list().stream().map(cm -> cm.getMetadata().getName()).filter(n -> n.startsWith(PREFIX))
                .map(n -> n.substring(PREFIX.length())).collect(Collectors.toSet());
    }

    @Override
    public CompletionStage<Void> write(Owner owner, String state) {
        ConfigMap cm = new ConfigMapBuilder().withNewMetadata().withName(name(owner.uid())).withNamespace(namespace)
                .withLabels(Map.of(LABEL, "true", PA_NAMESPACE_LABEL, owner.namespace(), PA_NAME_LABEL, owner.name()))
                .endMetadata().withData(Map.of(KEY, state)).build();
        // Created, or (it exists) replaced whole: this leader's state is the newest there is.
        return CompletableFuture.runAsync(() -> client.configMaps().inNamespace(namespace).resource(cm)
                .createOr(NonDeletingOperation::update), writer);
    }

    @Override
    public CompletionStage<Void> delete(String uid) {
        return CompletableFuture.runAsync(() -> client.configMaps().inNamespace(namespace).withName(name(uid)).delete(),
                writer);
    }

    @Override
    public void close() {
        watch.close();
        writer.shutdown();
    }
}
