package io.dilu.autoscaler.activator;

import java.util.Objects;

/**
 * A Knative revision, as the activator names it in a stat: its namespace and name, which are also those of its
 * PodAutoscaler.
 */
public record RevisionKey(String namespace, String name) {

    public RevisionKey {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(name, "name");
    }

    /** {@code namespace/name}, as Kubernetes writes a namespaced name. */
    @Override
    public String toString() {
        return namespace + "/" + name;
    }
}
