package io.dilu.webhook.admission;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EphemeralContainer;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A container of any kind (an ephemeral container is another class in the model) with what admission looks at,
 * named as a refusal names it, e.g. {@code spec.initContainers[0](init)}.
 */
record ContainerView(String at, Kind kind, String name, List<EnvVar> env, List<EnvFromSource> envFrom,
        ResourceRequirements resources, SecurityContext securityContext, List<VolumeMount> volumeMounts) {

    /** Resources of this prefix are Dilu's. */
    static final String DILU_RESOURCE_PREFIX = "dilu.io/";

    enum Kind { CONTAINER, INIT, EPHEMERAL }

    ContainerView {
        env = env == null ? List.of() : env;
        envFrom = envFrom == null ? List.of() : envFrom;
        volumeMounts = volumeMounts == null ? List.of() : volumeMounts;
    }

    /** Every container of the pod: containers, then init containers, then ephemeral containers. */
    static List<ContainerView> all(PodSpec spec) {
        List<ContainerView> all = new ArrayList<>();
        if (spec == null) {
            return all;
        }
        add(all, spec.getContainers(), "spec.containers", Kind.CONTAINER);
        add(all, spec.getInitContainers(), "spec.initContainers", Kind.INIT);
        List<EphemeralContainer> ephemeral = spec.getEphemeralContainers() == null ? List.of() : spec.getEphemeralContainers();
        for (int i = 0; i < ephemeral.size(); i++) {
            EphemeralContainer c = Objects.requireNonNull(ephemeral.get(i), "spec.ephemeralContainers[" + i + "] is null");
            all.add(new ContainerView("spec.ephemeralContainers[" + i + "](" + c.getName() + ")", Kind.EPHEMERAL, c.getName(),
                    c.getEnv(), c.getEnvFrom(), c.getResources(), c.getSecurityContext(), c.getVolumeMounts()));
        }
        return all;
    }

    private static void add(List<ContainerView> all, List<Container> containers, String field, Kind kind) {
        if (containers == null) {
            return;
        }
        for (int i = 0; i < containers.size(); i++) {
            Container c = Objects.requireNonNull(containers.get(i), field + "[" + i + "] is null");
            all.add(new ContainerView(field + "[" + i + "](" + c.getName() + ")", kind, c.getName(), c.getEnv(), c.getEnvFrom(),
                    c.getResources(), c.getSecurityContext(), c.getVolumeMounts()));
        }
    }

    /** The container's {@code dilu.io/} resources, limit before request (extended resources have them equal). */
    Map<String, Quantity> diluResources() {
        Map<String, Quantity> found = new TreeMap<>();
        if (resources != null) {
            collect(resources.getRequests(), found);
            collect(resources.getLimits(), found);
        }
        return found;
    }

    private static void collect(Map<String, Quantity> from, Map<String, Quantity> into) {
        if (from != null) {
            from.forEach((k, v) -> {
                if (k != null && k.startsWith(DILU_RESOURCE_PREFIX)) {
                    into.put(k, v);
                }
            });
        }
    }
}
