package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.contract.QuotaRights;
import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Quota;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarSource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.ArrayList;
import java.util.HashSet;
import io.dilu.kube.profile.ProfileSettings;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Every reason a pod's GPU share is impossible or unsafe, each naming the field and what would be accepted.
 * Tenants are adversaries here: whatever would let a pod escape the hook (its own preload or DILU_ settings, a
 * hand-picked node or scheduler), reach the GPU container from a neighbour ({@link Confinement}), take GPUs by
 * the NVIDIA toolkit's variables ({@link ToolkitEnv}), reach the node agent's files, or take more than its quota
 * rights is refused. A pure function of the pod, the few cluster facts it needs and the ConfigMap keys the
 * handler read for it; it never computes more than a pass over the pod.
 */
public final class PodValidator {

    private PodValidator() {}

    /**
     * What the validator needs to know beyond the pod.
     *
     * @param largestGpuMemoryMib the largest GPU memory any node reports, when known
     * @param privilegedAllowed the pod's namespace lets privileged containers have GPU shares
     * @param quotaRights the pod's namespace has {@link QuotaRights#ALLOW_SLO_LABEL} ({@link QuotaRights#granted})
     */
    public record Facts(OptionalLong largestGpuMemoryMib, boolean privilegedAllowed, boolean quotaRights) {}

    /** Longest value quoted back in a refusal: a tenant's megabyte of text is not worth echoing. */
    private static final int SHOWN = 80;

    /**
     * Everything wrong with a pod being created.
     *
     * @param configMaps the keys of the ConfigMaps its envFrom names, where they decide ({@link ToolkitEnv#configMapsToRead})
     */
    public static List<FieldError> validate(Pod pod, Facts facts, AdmissionPolicy policy, ToolkitEnv.ConfigMaps configMaps) {
        List<FieldError> errors = new ArrayList<>();
        PodSpec spec = pod.getSpec();
        // The node agent's files and the node's GPUs are out of reach of every pod, Dilu's or not.
        hostPaths(spec, policy.protectedHostPaths(), errors);
        List<ContainerView> containers = ContainerView.all(spec);
        boolean diluPod = PodMutator.concerns(pod);
        ToolkitEnv.check(containers, configMaps, diluPod, errors);
        if (!diluPod) {
            return errors;
        }
        int largestRequest = 0;
        int smallestRequest = Quota.MAX_SM + 1;
        boolean anyShare = false;
        for (ContainerView c : containers) {
            boolean gpu = false;
            if (c.kind() == ContainerView.Kind.CONTAINER) {
                Map<String, Quantity> dilu = c.diluResources();
                gpu = dilu.containsKey(DiluNames.GPU_SM);
                anyShare |= !dilu.isEmpty();
                int request = share(c, dilu, facts, errors);
                if (request > 0) {
                    largestRequest = Math.max(largestRequest, request);
                    smallestRequest = Math.min(smallestRequest, request);
                }
            } else {
                c.diluResources().forEach((name, q) -> errors.add(new FieldError(c.at() + ".resources[" + name + "]", shown(q),
                        "absent: only spec.containers may ask for a Dilu GPU share (init and ephemeral containers are "
                                + "neither placed nor limited by Dilu)")));
            }
            escapes(c, gpu, policy, errors);
            Confinement.container(c, gpu, facts.privilegedAllowed(), errors);
        }
        String node = spec.getNodeName();
        if (node != null && !node.isEmpty()) {
            errors.add(new FieldError("spec.nodeName", clip(node), "empty when a pod with a Dilu GPU share is created ("
                    + policy.hook().schedulerName() + " places it; a pod bound by hand skips the accounting of shares)"));
        }
        String scheduler = spec.getSchedulerName();
        if (!policy.hook().schedulerName().equals(scheduler)) {
            errors.add(new FieldError("spec.schedulerName", clip(String.valueOf(scheduler)), policy.hook().schedulerName()
                    + " for a pod with a Dilu GPU share (the mutating webhook sets it where the pod names none or default-scheduler)"));
        }
        if (anyShare) {
            Map<String, String> annotations = annotations(pod);
            errors.addAll(PodQuotaAnnotations.validate(annotations, Math.max(1, largestRequest)));
            // Each container's limit defaults to twice its own request: the smallest request is the one to judge by.
            errors.addAll(QuotaRights.violations(annotations, smallestRequest > Quota.MAX_SM ? Quota.MIN_SM : smallestRequest,
                    facts.quotaRights(), policy.etaViolation()));
        }
        // Parking is a state of a running instance, written by the autoscaler and the extender; a pod born parked
        // would hold device IDs at the kubelet without an SM booking.
        for (String key : PodUpdateValidator.PARKING) {
            if (annotations(pod).containsKey(key)) {
                errors.add(new FieldError("metadata.annotations[" + key + "]", clip(annotations(pod).get(key)),
                        "absent when a pod is created: the autoscaler parks and wakes running instances"));
            }
        }
        Confinement.pod(spec, annotations(pod), containers, errors);
        return errors;
    }

    private static Map<String, String> annotations(Pod pod) {
        return pod.getMetadata() == null || pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
    }

    /**
     * What is wrong with the pod's {@code dilu.io/profile}: missing, or giving values that need the quota right
     * where the namespace lacks it (the mutator does not copy those, so they are refused here, by the profile's name).
     */
    public static List<FieldError> profile(String namespace, String name, Optional<ProfileSettings> profile, boolean quotaRights,
            double etaViolation) {
        String field = "metadata.annotations[" + DiluNames.PROFILE + "]";
        if (profile.isEmpty()) {
            return List.of(new FieldError(field, name, "the name of a GpuFunctionProfile in namespace " + namespace
                    + " that has settings (written by hand, or profiled and Ready)"));
        }
        ProfileSettings p = profile.get();
        List<FieldError> violations = QuotaRights.violations(PodMutator.annotations(p), Math.clamp(p.smRequest(), Quota.MIN_SM, Quota.MAX_SM), quotaRights,
                etaViolation);
        if (violations.isEmpty()) {
            return List.of();
        }
        return List.of(new FieldError(field, name, "a GpuFunctionProfile that needs no quota right this namespace lacks; it gives "
                + violations.stream().map(v -> v.field() + "=" + v.value() + ", which must be " + v.allowed())
                        .collect(Collectors.joining("; "))));
    }

    /** The ephemeral containers of {@code after} that {@code before} has not (by name): what an UPDATE of pods/ephemeralcontainers adds. */
    static List<ContainerView> addedEphemeralContainers(PodSpec before, PodSpec after) {
        Set<String> existing = new HashSet<>();
        ContainerView.all(before).stream().filter(c -> c.kind() == ContainerView.Kind.EPHEMERAL).forEach(c -> existing.add(c.name()));
        return ContainerView.all(after).stream().filter(c -> c.kind() == ContainerView.Kind.EPHEMERAL && !existing.contains(c.name()))
                .toList();
    }

    /**
     * Ephemeral containers added by an UPDATE of {@code pods/ephemeralcontainers} (the only way to add them): held
     * to the rules of containers created with the pod (a pod's own fields cannot change after its creation).
     *
     * @param dilu the pod has a Dilu share
     */
    static List<FieldError> ephemeralContainers(List<ContainerView> added, boolean dilu, Facts facts, AdmissionPolicy policy,
            ToolkitEnv.ConfigMaps configMaps) {
        List<FieldError> errors = new ArrayList<>();
        ToolkitEnv.check(added, configMaps, dilu, errors);
        for (ContainerView c : added) {
            c.diluResources().forEach((name, q) -> errors.add(new FieldError(c.at() + ".resources[" + name + "]", shown(q),
                    "absent: only spec.containers may ask for a Dilu GPU share")));
            if (dilu) {
                escapes(c, false, policy, errors);
                Confinement.container(c, false, facts.privilegedAllowed(), errors);
            }
        }
        return errors;
    }

    /** The share of a regular container; returns its valid SM percent, or 0. */
    private static int share(ContainerView c, Map<String, Quantity> dilu, Facts facts, List<FieldError> errors) {
        String at = c.at() + ".resources";
        Quantity sm = dilu.get(DiluNames.GPU_SM);
        Quantity memory = dilu.get(DiluNames.GPU_MEMORY);
        dilu.keySet().stream().filter(k -> !k.equals(DiluNames.GPU_SM) && !k.equals(DiluNames.GPU_MEMORY)).forEach(k ->
                errors.add(new FieldError(at + "[" + k + "]", shown(dilu.get(k)),
                        "absent: Dilu's resources are " + DiluNames.GPU_SM + " and " + DiluNames.GPU_MEMORY)));
        if (sm == null && memory == null) {
            return 0;
        }
        int request = 0;
        if (sm == null) {
            errors.add(new FieldError(at + "[" + DiluNames.GPU_SM + "]", "missing",
                    "an integer percent in 1..100 (" + DiluNames.GPU_MEMORY + " needs a share of the SMs)"));
        } else {
            long v = PodShares.integer(sm);
            if (v < Quota.MIN_SM || v > Quota.MAX_SM) {
                errors.add(new FieldError(at + "[" + DiluNames.GPU_SM + "]", shown(sm), "an integer percent in 1..100"));
            } else {
                request = (int) v;
            }
        }
        if (memory != null) {
            long v = PodShares.integer(memory);
            long max = facts.largestGpuMemoryMib().orElse(Long.MAX_VALUE);
            if (v < 1 || v > max) {
                errors.add(new FieldError(at + "[" + DiluNames.GPU_MEMORY + "]", shown(memory),
                        facts.largestGpuMemoryMib().isPresent()
                                ? "an integer MiB in 1.." + max + " (the largest GPU in the cluster)"
                                : "an integer MiB of at least 1"));
            }
        }
        Quantity whole = c.resources().getLimits() != null && c.resources().getLimits().get("nvidia.com/gpu") != null
                ? c.resources().getLimits().get("nvidia.com/gpu")
                : c.resources().getRequests() == null ? null : c.resources().getRequests().get("nvidia.com/gpu");
        if (whole != null) {
            errors.add(new FieldError(at + "[nvidia.com/gpu]", shown(whole),
                    "absent: a container takes either a Dilu share (" + DiluNames.GPU_SM + ") or whole GPUs, not both"));
        }
        return request;
    }

    /** Ways out of the hook from a container of a Dilu pod; {@code gpu}: it has a share (the hook runs in it). */
    private static void escapes(ContainerView c, boolean gpu, AdmissionPolicy policy, List<FieldError> errors) {
        HookSettings hook = policy.hook();
        for (EnvVar e : c.env()) {
            String name = e.getName() == null ? "" : e.getName();
            if (hook.injected(e) || HookSettings.WORKLOAD_ENV.contains(name)) {
                continue;
            }
            if (name.equals(HookSettings.LD_PRELOAD)) {
                errors.add(new FieldError(c.at() + ".env[" + name + "]", shown(e), "absent: a pod with a Dilu GPU share preloads "
                        + "only the hook (the webhook sets " + HookSettings.LD_PRELOAD + "=" + hook.libraryPath() + ")"));
            } else if (name.startsWith(HookSettings.DILU_PREFIX)) {
                errors.add(new FieldError(c.at() + ".env[" + clip(name) + "]", shown(e),
                        "absent: " + HookSettings.DILU_PREFIX + " variables are set by the webhook and the node agent only"));
            }
        }
        if (gpu) {
            for (int i = 0; i < c.envFrom().size(); i++) {
                EnvFromSource from = c.envFrom().get(i);
                if (!safePrefix(from.getPrefix())) {
                    errors.add(new FieldError(c.at() + ".envFrom[" + i + "]", shown(from), "a prefix that cannot make "
                            + HookSettings.LD_PRELOAD + " or a " + HookSettings.DILU_PREFIX + " name on a container with a "
                            + "Dilu GPU share: not empty, not a beginning of " + HookSettings.LD_PRELOAD + " or of "
                            + HookSettings.DILU_PREFIX + ", not starting with " + HookSettings.DILU_PREFIX + " (e.g. APP_)"));
                }
            }
            for (int i = 0; i < c.volumeMounts().size(); i++) {
                VolumeMount m = c.volumeMounts().get(i);
                String path = m.getMountPath() == null ? "" : m.getMountPath();
                if (policy.protectedContainerPaths().stream().anyMatch(p -> HostPath.within(path, p))) {
                    errors.add(new FieldError(c.at() + ".volumeMounts[" + i + "](" + m.getName() + ").mountPath", clip(path),
                            "a path neither at nor under " + String.join(", ", policy.protectedContainerPaths())
                                    + " (the node agent mounts the hook and the control block there)"));
                }
            }
        }
    }

    /**
     * Whether an envFrom prefix can never make {@code LD_PRELOAD} or a {@code DILU_} name whatever the keys of its
     * ConfigMap or Secret (the name is the prefix followed by a key). Conservative: a prefix equal to LD_PRELOAD
     * is refused too.
     */
    static boolean safePrefix(String prefix) {
        String p = prefix == null ? "" : prefix;
        return !p.isEmpty() && !HookSettings.LD_PRELOAD.startsWith(p) && !HookSettings.DILU_PREFIX.startsWith(p)
                && !p.startsWith(HookSettings.DILU_PREFIX);
    }

    private static void hostPaths(PodSpec spec, List<String> protectedPaths, List<FieldError> errors) {
        List<Volume> volumes = spec == null || spec.getVolumes() == null ? List.of() : spec.getVolumes();
        for (int i = 0; i < volumes.size(); i++) {
            Volume v = volumes.get(i);
            if (v == null || v.getHostPath() == null) {
                continue;
            }
            String path = v.getHostPath().getPath() == null ? "" : v.getHostPath().getPath();
            if (HostPath.refused(path, protectedPaths)) {
                errors.add(new FieldError("spec.volumes[" + i + "](" + v.getName() + ").hostPath.path", clip(path),
                        HostPath.allowed(protectedPaths)));
            }
        }
    }

    /** As the user wrote the number (the API server stores 50000 as "50k"), or the text when it is not a whole one. */
    private static String shown(Quantity q) {
        long whole = PodShares.integer(q);
        return whole >= 0 ? Long.toString(whole) : clip(q.getAmount() + (q.getFormat() == null ? "" : q.getFormat()));
    }

    static String shown(EnvVar e) {
        EnvVarSource from = e.getValueFrom();
        if (from == null) {
            return clip(e.getValue() == null ? "" : e.getValue());
        }
        if (from.getFieldRef() != null) {
            return "valueFrom.fieldRef " + clip(from.getFieldRef().getFieldPath());
        }
        if (from.getConfigMapKeyRef() != null) {
            return "valueFrom.configMapKeyRef " + clip(from.getConfigMapKeyRef().getName() + "/" + from.getConfigMapKeyRef().getKey());
        }
        if (from.getSecretKeyRef() != null) {
            return "valueFrom.secretKeyRef " + clip(from.getSecretKeyRef().getName() + "/" + from.getSecretKeyRef().getKey());
        }
        return "valueFrom";
    }

    static String shown(EnvFromSource from) {
        String source = from.getConfigMapRef() != null ? "configMapRef " + from.getConfigMapRef().getName()
                : from.getSecretRef() != null ? "secretRef " + from.getSecretRef().getName() : "a source";
        return clip(source) + " with prefix \"" + clip(from.getPrefix() == null ? "" : from.getPrefix()) + "\"";
    }

    static String clip(String s) {
        return s == null || s.length() <= SHOWN ? String.valueOf(s) : s.substring(0, SHOWN) + "…";
    }
}
