package io.dilu.webhook.admission;

import static io.dilu.webhook.admission.PatchOperation.add;
import static io.dilu.webhook.admission.PatchOperation.pointer;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.contract.QuotaRights;
import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodReadinessGate;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.profile.ProfileSettings;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Turns a pod that asks for a GPU share into one that works: the hook preloaded (the device plugin mounts it),
 * the pod's identity in the environment for the hook, Dilu's scheduler, the runtime's default seccomp profile
 * where it names none, SYS_CHROOT and SYS_PTRACE dropped from every container and init container, a readiness gate on {@code dilu.io/serving} where Dilu's autoscaler scales it (parking), and
 * the quota annotations filled in
 * (from the function's {@code GpuFunctionProfile} when the pod names one, else the defaults). A pure function of
 * the pod: it returns a mutated copy and the JSON Patch of exactly what it changed, and mutating that copy again
 * changes nothing. It never adds what {@link PodValidator} refuses: no value that needs the quota right where the
 * namespace lacks it, and it leaves a pod's own LD_PRELOAD or DILU_ variable for the validator to refuse.
 */
public final class PodMutator {

    static final String RUNTIME_DEFAULT = "RuntimeDefault";

    private PodMutator() {}

    /**
     * The mutated pod and the patch that makes it from the original.
     *
     * @param patch add and replace operations, in order; empty when nothing changes
     */
    public record Mutation(Pod pod, List<PatchOperation> patch) {}

    /** Whether the pod is Dilu's: a container of any kind asks for a {@code dilu.io/} resource, or it names a profile. */
    public static boolean concerns(Pod pod) {
        return profileName(pod).isPresent()
                || ContainerView.all(pod.getSpec()).stream().anyMatch(c -> !c.diluResources().isEmpty());
    }

    public static Optional<String> profileName(Pod pod) {
        Map<String, String> a = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
        return Optional.ofNullable(a == null ? null : a.get(DiluNames.PROFILE)).filter(s -> !s.isBlank());
    }

    /**
     * @param quotaRights the namespace has {@link QuotaRights#ALLOW_SLO_LABEL}: serving pods default to slo, and
     *     a profile's values that need the right are copied
     * @param etaViolation the nodes' KLC threshold, below which a profile's needs the right
     */
    public static Mutation mutate(Pod original, Optional<ProfileSettings> profile, HookSettings hook, boolean quotaRights,
            double etaViolation) {
        Pod pod = new PodBuilder(original).build();
        List<PatchOperation> patch = new ArrayList<>();
        List<Container> containers = pod.getSpec().getContainers() == null ? List.of() : pod.getSpec().getContainers();
        profile.ifPresent(p -> applyProfile(containers, p, patch));
        List<Integer> gpu = new ArrayList<>();
        for (int i = 0; i < containers.size(); i++) {
            if (asksForShare(containers.get(i))) {
                gpu.add(i);
            }
        }
        if (gpu.isEmpty()) {
            return new Mutation(pod, List.copyOf(patch));
        }
        annotate(pod, profile, gpu.stream().map(i -> smPercent(containers.get(i))).toList(), quotaRights, etaViolation,
                patch);
        String scheduler = pod.getSpec().getSchedulerName();
        if (scheduler == null || scheduler.isBlank() || scheduler.equals("default-scheduler")) {
            pod.getSpec().setSchedulerName(hook.schedulerName());
            patch.add(scheduler == null ? add("/spec/schedulerName", hook.schedulerName())
                    : PatchOperation.replace("/spec/schedulerName", hook.schedulerName()));
        }
        // The NVIDIA container runtime turns the agent's NVIDIA_VISIBLE_DEVICES into devices; where it is not the
        // nodes' default, a GPU pod must name its RuntimeClass. A pod that names one keeps its own.
        if (hook.runtimeClassName().isPresent() && pod.getSpec().getRuntimeClassName() == null) {
            pod.getSpec().setRuntimeClassName(hook.runtimeClassName().get());
            patch.add(add("/spec/runtimeClassName", hook.runtimeClassName().get()));
        }
        seccomp(pod, patch);
        dropCapabilities(pod.getSpec().getContainers(), "containers", patch);
        dropCapabilities(pod.getSpec().getInitContainers(), "initContainers", patch);
        servingGate(pod, patch);
        List<EnvVar> env = new ArrayList<>(hook.env());
        profile.flatMap(ProfileSettings::batchSize)
                .ifPresent(b -> env.add(new EnvVar(TrialReport.BATCH_SIZE_ENV, Integer.toString(b), null)));
        for (int i : gpu) {
            inject(containers.get(i), i, env, patch);
        }
        return new Mutation(pod, List.copyOf(patch));
    }

    /**
     * The runtime's default seccomp profile for a pod that names none (neither the field nor the deprecated
     * annotation, which the API server turns into the field after mutation): it refuses new user namespaces to a
     * process without CAP_SYS_ADMIN, and with them a mount over the hook. Containers that name their own keep it
     * (the validator refuses Unconfined).
     */
    private static void seccomp(Pod pod, List<PatchOperation> patch) {
        PodSecurityContext context = pod.getSpec().getSecurityContext();
        Map<String, String> annotations = pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
        if (context != null && context.getSeccompProfile() != null || annotations.containsKey(Confinement.POD_SECCOMP_ANNOTATION)) {
            return;
        }
        SeccompProfile profile = new SeccompProfile();
        profile.setType(RUNTIME_DEFAULT);
        if (context == null) {
            context = new PodSecurityContext();
            context.setSeccompProfile(profile);
            pod.getSpec().setSecurityContext(context);
            patch.add(add("/spec/securityContext", Map.of("seccompProfile", Map.of("type", RUNTIME_DEFAULT))));
        } else {
            context.setSeccompProfile(profile);
            patch.add(add("/spec/securityContext/seccompProfile", Map.of("type", RUNTIME_DEFAULT)));
        }
    }

    /**
     * {@link Confinement#DROPPED} added to {@code capabilities.drop} of each container that does not drop them (or
     * ALL) already. A capability the container adds is left for the validator to refuse: dropping it here would
     * contradict the pod's own spec without telling its author.
     */
    private static void dropCapabilities(List<Container> containers, String field, List<PatchOperation> patch) {
        if (containers == null) {
            return;
        }
        for (int i = 0; i < containers.size(); i++) {
            Container c = containers.get(i);
            SecurityContext sc = c.getSecurityContext();
            List<String> missing = Confinement.DROPPED.stream().filter(cap -> !Confinement.dropped(sc, cap)).toList();
            if (missing.isEmpty()) {
                continue;
            }
            String at = pointer("spec", field, i, "securityContext");
            if (sc == null) {
                patch.add(add(at, Map.of("capabilities", Map.of("drop", missing))));
                c.setSecurityContext(new SecurityContextBuilder().withNewCapabilities().withDrop(missing).endCapabilities().build());
            } else if (sc.getCapabilities() == null) {
                patch.add(add(at + "/capabilities", Map.of("drop", missing)));
                sc.setCapabilities(new CapabilitiesBuilder().withDrop(missing).build());
            } else if (sc.getCapabilities().getDrop() == null || sc.getCapabilities().getDrop().isEmpty()) {
                patch.add(add(at + "/capabilities/drop", missing));
                sc.getCapabilities().setDrop(new ArrayList<>(missing));
            } else {
                missing.forEach(cap -> patch.add(add(at + "/capabilities/drop/-", cap)));
                List<String> drop = new ArrayList<>(sc.getCapabilities().getDrop());
                drop.addAll(missing);
                sc.getCapabilities().setDrop(drop);
            }
        }
    }

    /**
     * A readiness gate on {@code dilu.io/serving} for a pod that Dilu's autoscaler scales (Knative copies the revision's
     * {@code autoscaling.knative.dev/class} to its pods): ready only while its SM request is booked, so that a parked
     * instance leaves its Services' endpoints. The scheduler extender sets the condition True at bind. A pod that
     * declares the gate itself keeps it; other pods get none (nobody parks them, and nothing but the extender would set it).
     */
    private static void servingGate(Pod pod, List<PatchOperation> patch) {
        Map<String, String> annotations = pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
        if (!DiluNames.AUTOSCALER_CLASS.equals(annotations.get(KnativeNames.CLASS)) || PodShares.servingGate(pod)) {
            return;
        }
        PodReadinessGate gate = new PodReadinessGate(DiluNames.SERVING_CONDITION);
        List<PodReadinessGate> gates = pod.getSpec().getReadinessGates() == null ? new ArrayList<>()
                : new ArrayList<>(pod.getSpec().getReadinessGates());
        patch.add(gates.isEmpty() ? add("/spec/readinessGates", List.of(Map.of("conditionType", DiluNames.SERVING_CONDITION)))
                : add("/spec/readinessGates/-", Map.of("conditionType", DiluNames.SERVING_CONDITION)));
        gates.add(gate);
        pod.getSpec().setReadinessGates(gates);
    }

    /** Fills the quota annotations the pod leaves out, each only where the quota rights allow it. */
    private static void annotate(Pod pod, Optional<ProfileSettings> profile, List<Integer> requests, boolean quotaRights,
            double etaViolation, List<PatchOperation> patch) {
        Map<String, String> own = pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
        Map<String, String> labels = pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
        List<Map.Entry<String, String>> wanted = new ArrayList<>();
        profile.ifPresent(p -> wanted.addAll(annotations(p).entrySet()));
        KnativeNames.SERVING_LABELS.stream().map(labels::get).filter(v -> v != null && !v.isBlank()).findFirst()
                .ifPresent(fn -> wanted.add(Map.entry(DiluNames.FUNCTION, fn)));
        int largest = requests.stream().mapToInt(Integer::intValue).max().orElse(-1);
        if (largest >= Quota.MIN_SM) {
            wanted.add(Map.entry(DiluNames.SM_LIMIT, Integer.toString(Quota.defaultLimit(largest))));
        }
        boolean serving = KnativeNames.SERVING_LABELS.stream().anyMatch(labels::containsKey);
        // Serving pods are SLO-sensitive, but slo needs the right: where the namespace lacks it the rights check
        // below drops slo and the best-effort after it stands.
        wanted.add(Map.entry(DiluNames.PRIORITY, (serving ? Priority.SLO : Priority.BEST_EFFORT).label()));
        wanted.add(Map.entry(DiluNames.PRIORITY, Priority.BEST_EFFORT.label()));

        // The rights are judged against the smallest request: each container's limit defaults to twice its own.
        int smallest = requests.stream().mapToInt(Integer::intValue).filter(r -> r >= Quota.MIN_SM).min().orElse(Quota.MIN_SM);
        Map<String, String> all = new LinkedHashMap<>(own);
        Map<String, String> added = new LinkedHashMap<>();
        for (Map.Entry<String, String> w : wanted) {
            if (all.containsKey(w.getKey())) {
                continue;
            }
            Map<String, String> tentative = new LinkedHashMap<>(all);
            tentative.put(w.getKey(), w.getValue());
            if (QuotaRights.violations(tentative, smallest, quotaRights, etaViolation).stream().map(FieldError::field).noneMatch(w.getKey()::equals)) {
                all.put(w.getKey(), w.getValue());
                added.put(w.getKey(), w.getValue());
            }
        }
        if (added.isEmpty()) {
            return;
        }
        // An absent (or empty) map is added whole; keys are added one by one to a map that has some already.
        if (own.isEmpty()) {
            patch.add(add("/metadata/annotations", added));
        } else {
            added.forEach((k, v) -> patch.add(add(pointer("metadata", "annotations", k), v)));
        }
        pod.getMetadata().setAnnotations(all);
    }

    /**
     * LD_PRELOAD and the pod's identity, where the container does not set them itself (the validator refuses that),
     * and the profile's batch size, which the workload reads, where the container does not choose its own.
     */
    private static void inject(Container c, int index, List<EnvVar> wanted, List<PatchOperation> patch) {
        List<EnvVar> env = c.getEnv() == null ? new ArrayList<>() : new ArrayList<>(c.getEnv());
        Set<String> names = new HashSet<>();
        env.forEach(e -> names.add(e.getName()));
        List<EnvVar> added = wanted.stream().filter(e -> !names.contains(e.getName())).toList();
        if (added.isEmpty()) {
            return;
        }
        if (env.isEmpty()) {
            patch.add(add(pointer("spec", "containers", index, "env"), added));
        } else {
            added.forEach(e -> patch.add(add(pointer("spec", "containers", index, "env", "-"), e)));
        }
        env.addAll(added);
        c.setEnv(env);
    }

    /**
     * The pod annotations a profile gives. In this order the KLC threshold comes before the LLM mark, so that
     * a mark beside a threshold no longer lowers it when the two are judged one after the other.
     */
    static Map<String, String> annotations(ProfileSettings p) {
        Map<String, String> a = new LinkedHashMap<>();
        a.put(DiluNames.FUNCTION, p.function());
        p.smLimit().ifPresent(l -> a.put(DiluNames.SM_LIMIT, Integer.toString(l)));
        p.batchSize().ifPresent(b -> a.put(DiluNames.BATCH_SIZE, Integer.toString(b)));
        p.klcThreshold().ifPresent(t -> a.put(DiluNames.KLC_THRESHOLD, BigDecimal.valueOf(t).stripTrailingZeros().toPlainString()));
        if (p.llm()) {
            a.put(DiluNames.LLM, "true");
        }
        p.priority().ifPresent(pr -> a.put(DiluNames.PRIORITY, pr));
        return a;
    }

    /** The profile's share for the GPU containers that do not say theirs (the first container if none asks). */
    private static void applyProfile(List<Container> containers, ProfileSettings p, List<PatchOperation> patch) {
        List<Integer> targets = new ArrayList<>();
        for (int i = 0; i < containers.size(); i++) {
            if (asksForShare(containers.get(i))) {
                targets.add(i);
            }
        }
        if (targets.isEmpty() && !containers.isEmpty()) {
            targets.add(0);
        }
        for (int i : targets) {
            Container c = containers.get(i);
            ResourceRequirements r = c.getResources();
            // Extended resources must have equal request and limit; set both where neither is given.
            Map<String, String> amounts = new LinkedHashMap<>();
            if (!has(r, DiluNames.GPU_SM)) {
                amounts.put(DiluNames.GPU_SM, Integer.toString(p.smRequest()));
            }
            if (!has(r, DiluNames.GPU_MEMORY)) {
                amounts.put(DiluNames.GPU_MEMORY, Long.toString(p.memoryMiB()));
            }
            if (amounts.isEmpty()) {
                continue;
            }
            if (r == null) {
                patch.add(add(pointer("spec", "containers", i, "resources"), Map.of("limits", amounts, "requests", amounts)));
                r = new ResourceRequirements();
                r.setLimits(quantities(Map.of(), amounts));
                r.setRequests(quantities(Map.of(), amounts));
                c.setResources(r);
                continue;
            }
            r.setLimits(merge(r.getLimits(), amounts, pointer("spec", "containers", i, "resources", "limits"), patch));
            r.setRequests(merge(r.getRequests(), amounts, pointer("spec", "containers", i, "resources", "requests"), patch));
        }
    }

    private static Map<String, Quantity> merge(Map<String, Quantity> existing, Map<String, String> amounts, String at,
            List<PatchOperation> patch) {
        if (existing == null || existing.isEmpty()) {
            patch.add(add(at, amounts));
        } else {
            amounts.forEach((k, v) -> patch.add(add(at + pointer(k), v)));
        }
        return quantities(existing == null ? Map.of() : existing, amounts);
    }

    private static Map<String, Quantity> quantities(Map<String, Quantity> existing, Map<String, String> amounts) {
        Map<String, Quantity> all = new LinkedHashMap<>(existing);
        amounts.forEach((k, v) -> all.put(k, new Quantity(v)));
        return all;
    }

    private static boolean has(ResourceRequirements r, String resource) {
        return r != null && (r.getLimits() != null && r.getLimits().containsKey(resource)
                || r.getRequests() != null && r.getRequests().containsKey(resource));
    }

    static boolean asksForShare(Container c) {
        return has(c.getResources(), DiluNames.GPU_SM);
    }

    /** The container's SM percent, or -1 when it is not a whole number in 1..100 (read without arithmetic on it). */
    private static int smPercent(Container c) {
        ResourceRequirements r = c.getResources();
        Quantity q = r.getRequests() != null && r.getRequests().get(DiluNames.GPU_SM) != null
                ? r.getRequests().get(DiluNames.GPU_SM) : r.getLimits().get(DiluNames.GPU_SM);
        long percent = q == null ? -1 : PodShares.integer(q);
        return percent >= Quota.MIN_SM && percent <= Quota.MAX_SM ? (int) percent : -1;
    }
}
