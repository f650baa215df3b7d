package io.dilu.webhook.admission;

import io.dilu.core.profiling.TrialReport;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.EnvVarSource;
import io.fabric8.kubernetes.api.model.ObjectFieldSelector;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * How a GPU pod gets the hook: the node agent's device plugin mounts the library into each GPU container at
 * Allocate, and the webhook preloads it and tells it who the pod is.
 *
 * @param containerDir where containers see the library
 * @param file the library's file name
 * @param schedulerName the scheduler GPU pods are given
 * @param runtimeClassName the RuntimeClass GPU pods that name none are given (the NVIDIA container runtime's, where
 *     it is not the nodes' default runtime); empty: none
 */
public record HookSettings(String containerDir, String file, String schedulerName, Optional<String> runtimeClassName) {

    static final String LD_PRELOAD = "LD_PRELOAD";
    /** Environment variables of this prefix are Dilu's (the webhook's and the node agent's), never the pod's. */
    static final String DILU_PREFIX = "DILU_";
    /**
     * The exceptions: variables the workload reads and the hook does not (the batch size, where a profiling trial
     * writes its result). A tenant setting them changes only what its own function does.
     */
    static final Set<String> WORKLOAD_ENV = Set.of(TrialReport.BATCH_SIZE_ENV, TrialReport.RESULT_ENV);

    /** The pod's identity for the hook, from the Downward API. */
    private static final Map<String, String> DOWNWARD = Map.of(
            "DILU_POD_UID", "metadata.uid", "DILU_POD_NAME", "metadata.name", "DILU_POD_NAMESPACE", "metadata.namespace");
    private static final List<String> DOWNWARD_ORDER = List.of("DILU_POD_UID", "DILU_POD_NAME", "DILU_POD_NAMESPACE");

    public String libraryPath() {
        return containerDir + "/" + file;
    }

    /** What the webhook puts in the environment of each GPU container (fresh objects, the caller may keep them). */
    List<EnvVar> env() {
        List<EnvVar> env = new ArrayList<>();
        env.add(new EnvVar(LD_PRELOAD, libraryPath(), null));
        for (String name : DOWNWARD_ORDER) {
            env.add(new EnvVarBuilder().withName(name).withNewValueFrom().withNewFieldRef()
                    .withFieldPath(DOWNWARD.get(name)).endFieldRef().endValueFrom().build());
        }
        return env;
    }

    /**
     * Whether {@code e} is exactly one of {@link #env()}, as the webhook wrote it or as the API server returns it
     * (it defaults a fieldRef's apiVersion to v1): a pod that was mutated already must pass validation.
     */
    boolean injected(EnvVar e) {
        boolean noValue = e.getValue() == null || e.getValue().isEmpty();
        if (LD_PRELOAD.equals(e.getName())) {
            return e.getValueFrom() == null && libraryPath().equals(e.getValue());
        }
        String field = DOWNWARD.get(e.getName());
        EnvVarSource from = e.getValueFrom();
        if (field == null || !noValue || from == null || from.getConfigMapKeyRef() != null || from.getSecretKeyRef() != null
                || from.getResourceFieldRef() != null) {
            return false;
        }
        ObjectFieldSelector ref = from.getFieldRef();
        return ref != null && field.equals(ref.getFieldPath()) && (ref.getApiVersion() == null || "v1".equals(ref.getApiVersion()));
    }
}
