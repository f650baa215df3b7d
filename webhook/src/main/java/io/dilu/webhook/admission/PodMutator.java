package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns a pod that asks for a GPU share into one that works: the hook preloaded from the node's read-only
 * copy, the pod's identity in the environment for the hook, Dilu's scheduler, and the quota annotations filled
 * in (from the function's {@code GpuFunctionProfile} when the pod names one, else the defaults). A pure
 * function of the pod: it returns a mutated copy, and mutating that copy again changes nothing.
 */
public final class PodMutator {

    /** Pod annotation naming the {@code GpuFunctionProfile} (same namespace) to take the quotas from. */
    public static final String PROFILE = "dilu.io/profile";
    static final String LD_PRELOAD = "LD_PRELOAD";
    static final List<String> SERVING_LABELS = List.of("serving.kserve.io/inferenceservice", "serving.knative.dev/service");

    private PodMutator() {}

    /** Whether the webhook has anything to do with this pod. */
    public static boolean concerns(Pod pod) {
        return PodShares.of(pod).isPresent() || profileName(pod).isPresent();
    }

    public static Optional<String> profileName(Pod pod) {
        Map<String, String> a = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
        return Optional.ofNullable(a == null ? null : a.get(PROFILE)).filter(s -> !s.isBlank());
    }

    public static Pod mutate(Pod original, Optional<ProfileSpec> profile, HookSettings hook) {
        Pod pod = new PodBuilder(original).build();
        List<Container> containers = pod.getSpec().getContainers();
        profile.ifPresent(p -> applyProfile(containers, p));
        List<Container> gpu = containers.stream().filter(PodMutator::asksForShare).toList();
        if (gpu.isEmpty()) {
            return pod;
        }
        Map<String, String> annotations = new LinkedHashMap<>(
                pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations());
        Map<String, String> labels = pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
        int request = gpu.stream().mapToInt(PodMutator::smPercent).max().orElse(0);
        profile.ifPresent(p -> {
            annotations.putIfAbsent(DiluNames.FUNCTION, p.function());
            p.smLimit().ifPresent(l -> annotations.putIfAbsent(DiluNames.SM_LIMIT, Integer.toString(l)));
            p.batchSize().ifPresent(b -> annotations.putIfAbsent(DiluNames.BATCH_SIZE, Integer.toString(b)));
            p.priority().ifPresent(pr -> annotations.putIfAbsent(DiluNames.PRIORITY, pr));
            if (p.llm()) {
                annotations.putIfAbsent(DiluNames.LLM, "true");
            }
            p.klcThreshold().ifPresent(t -> annotations.putIfAbsent(DiluNames.KLC_THRESHOLD, BigDecimal.valueOf(t)
                    .stripTrailingZeros().toPlainString()));
        });
        SERVING_LABELS.stream().map(labels::get).filter(v -> v != null && !v.isBlank()).findFirst()
                .ifPresent(fn -> annotations.putIfAbsent(DiluNames.FUNCTION, fn));
        if (request >= Quota.MIN_SM && request <= Quota.MAX_SM) {
            annotations.putIfAbsent(DiluNames.SM_LIMIT, Integer.toString(Quota.defaultLimit(request)));
        }
        boolean serving = SERVING_LABELS.stream().anyMatch(labels::containsKey);
        annotations.putIfAbsent(DiluNames.PRIORITY, (serving ? Priority.SLO : Priority.BEST_EFFORT).label());
        pod.getMetadata().setAnnotations(annotations);

        String scheduler = pod.getSpec().getSchedulerName();
        if (scheduler == null || scheduler.isBlank() || scheduler.equals("default-scheduler")) {
            pod.getSpec().setSchedulerName(hook.schedulerName());
        }
        if (pod.getSpec().getVolumes().stream().noneMatch(v -> HookSettings.VOLUME.equals(v.getName()))) {
            pod.getSpec().getVolumes().add(new VolumeBuilder().withName(HookSettings.VOLUME)
                    .withNewHostPath().withPath(hook.hostDir()).withType("Directory").endHostPath().build());
        }
        for (Container c : gpu) {
            inject(c, hook);
        }
        return pod;
    }

    private static void inject(Container c, HookSettings hook) {
        List<EnvVar> env = c.getEnv();
        Optional<EnvVar> preload = env.stream().filter(e -> LD_PRELOAD.equals(e.getName())).findFirst();
        if (preload.isEmpty()) {
            env.add(new EnvVar(LD_PRELOAD, hook.libraryPath(), null));
        } else if (preload.get().getValueFrom() == null) {
            String value = preload.get().getValue() == null ? "" : preload.get().getValue();
            if (!List.of(value.split("[: ]")).contains(hook.libraryPath())) {
                // The hook first: it must see cuda* symbols before any other preloaded library resolves them.
                preload.get().setValue(value.isBlank() ? hook.libraryPath() : hook.libraryPath() + ":" + value);
            }
        }
        downward(env, "DILU_POD_UID", "metadata.uid");
        downward(env, "DILU_POD_NAME", "metadata.name");
        downward(env, "DILU_POD_NAMESPACE", "metadata.namespace");
        if (c.getVolumeMounts().stream().noneMatch(m -> HookSettings.VOLUME.equals(m.getName()))) {
            c.getVolumeMounts().add(new VolumeMountBuilder().withName(HookSettings.VOLUME)
                    .withMountPath(hook.containerDir()).withReadOnly(true).build());
        }
    }

    private static void downward(List<EnvVar> env, String name, String field) {
        if (env.stream().noneMatch(e -> name.equals(e.getName()))) {
            env.add(new EnvVarBuilder().withName(name).withNewValueFrom().withNewFieldRef()
                    .withFieldPath(field).endFieldRef().endValueFrom().build());
        }
    }

    /** The profile's share for the GPU containers that do not say theirs (the first container if none asks). */
    private static void applyProfile(List<Container> containers, ProfileSpec p) {
        List<Container> targets = new ArrayList<>(containers.stream().filter(PodMutator::asksForShare).toList());
        if (targets.isEmpty() && !containers.isEmpty()) {
            targets.add(containers.getFirst());
        }
        for (Container c : targets) {
            setIfAbsent(c, DiluNames.GPU_SM, Integer.toString(p.smRequest()));
            setIfAbsent(c, DiluNames.GPU_MEMORY, Long.toString(p.memoryMiB()));
        }
    }

    /** Extended resources must have equal request and limit; set both where neither is given. */
    private static void setIfAbsent(Container c, String resource, String amount) {
        if (c.getResources() == null) {
            c.setResources(new ResourceRequirements());
        }
        ResourceRequirements r = c.getResources();
        Map<String, Quantity> limits = r.getLimits() == null ? new HashMap<>() : new HashMap<>(r.getLimits());
        Map<String, Quantity> requests = r.getRequests() == null ? new HashMap<>() : new HashMap<>(r.getRequests());
        if (!limits.containsKey(resource) && !requests.containsKey(resource)) {
            limits.put(resource, new Quantity(amount));
            requests.put(resource, new Quantity(amount));
            r.setLimits(limits);
            r.setRequests(requests);
        }
    }

    static boolean asksForShare(Container c) {
        return c.getResources() != null && (has(c.getResources().getLimits()) || has(c.getResources().getRequests()));
    }

    private static boolean has(Map<String, Quantity> resources) {
        return resources != null && resources.containsKey(DiluNames.GPU_SM);
    }

    private static int smPercent(Container c) {
        Quantity q = Optional.ofNullable(c.getResources().getRequests()).map(m -> m.get(DiluNames.GPU_SM))
                .orElseGet(() -> c.getResources().getLimits().get(DiluNames.GPU_SM));
        try {
            return q.getNumericalAmount().intValueExact();
        } catch (ArithmeticException | IllegalArgumentException e) {
            return -1;
        }
    }
}
