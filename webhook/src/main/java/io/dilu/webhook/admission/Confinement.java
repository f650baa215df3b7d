package io.dilu.webhook.admission;

import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SecurityContext;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What keeps every container of a pod with a Dilu share — sidecars, init and ephemeral containers as much as the
 * GPU container — away from the GPU container's processes, its mounts (the hook, {@code /etc/ld.so.preload}, the
 * grant page) and the node: no privileged container, no capability that reaches another process or the kernel
 * (and SYS_CHROOT and SYS_PTRACE dropped, {@link #DROPPED}), no namespace of the node's, no shared process namespace, and a seccomp profile on every container (the
 * runtime's default refuses new user namespaces, and with them {@code unshare -Urm} and a mount over the hook).
 */
final class Confinement {

    private Confinement() {}

    /**
     * Added capabilities refused in a pod with a Dilu share, and what each reaches. Each is one for which the
     * runtime's default seccomp profile opens the syscalls that do it (containerd {@code contrib/seccomp/seccomp_default.go}).
     * NET_ADMIN and NET_RAW stay allowed: they reach the pod's own network namespace only (service-mesh init
     * containers need them).
     */
    static final Map<String, String> REACHING = reaching();

    private static Map<String, String> reaching() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("ALL", "every capability below");
        m.put("SYS_ADMIN", "mount, umount, setns and unshare: it can unmount or cover the hook and the grant page");
        m.put("SYS_PTRACE", "ptrace and process_vm_writev: it can rewrite the hook inside another process");
        m.put("SYS_CHROOT", "chroot: a root process runs programs under a tree without /etc/ld.so.preload, so without the hook");
        m.put("SYS_MODULE", "kernel modules: the whole node");
        m.put("SYS_RAWIO", "iopl, ioperm and raw device I/O: the GPU's registers");
        m.put("SYS_BOOT", "kexec_load: another kernel");
        m.put("DAC_READ_SEARCH", "open_by_handle_at: any file of the node's filesystem, the node agent's included");
        m.put("BPF", "BPF programs: probes into other processes and the kernel");
        m.put("PERFMON", "perf_event_open on other processes and the kernel");
        m.put("IPC_OWNER", "System V shared memory of the pod's other containers, whatever its permissions");
        m.put("MAC_ADMIN", "the node's AppArmor or SELinux policy");
        m.put("MAC_OVERRIDE", "past the node's AppArmor or SELinux policy");
        m.put("CHECKPOINT_RESTORE", "other processes' mapped files and checkpoints");
        return Collections.unmodifiableMap(m);
    }

    /**
     * Names that are no capability's but read as one (a runtime asked for them grants nothing, or refuses the
     * container): refused as the capability a reader takes them for, so that no spelling of it passes.
     */
    private static final Map<String, String> ALIASES = Map.of("CHROOT", "SYS_CHROOT", "PTRACE", "SYS_PTRACE");

    /**
     * Capabilities the mutating webhook drops from every container of a pod with a Dilu share, and validation
     * requires dropped: runtimes give containers SYS_CHROOT by default (containerd's and CRI-O's default sets), and a
     * root process with it chroots into a tree of its own, where the loader finds no {@code /etc/ld.so.preload} and
     * the program runs without the hook. SYS_PTRACE is not in those defaults; dropping it too keeps a runtime whose
     * default set has it from handing it out. No right brings either back: a debugger needs neither for the
     * processes it starts, and both reach the GPU process from beside it. Dropped from the bounding set, neither
     * comes back through a setuid binary or file capabilities, so {@code allowPrivilegeEscalation} stays allowed.
     */
    static final List<String> DROPPED = List.of("SYS_CHROOT", "SYS_PTRACE");

    static final String UNCONFINED = "Unconfined";
    static final String POD_SECCOMP_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod";
    static final String CONTAINER_SECCOMP_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/";
    private static final String PROFILES = "RuntimeDefault or Localhost in a pod with a Dilu GPU share (unconfined, a process "
            + "without capabilities can still create a user namespace and mount over the hook: unshare -Urm)";

    /** The pod's own fields: the node's namespaces, a shared process namespace, its seccomp profile and annotations. */
    static void pod(PodSpec spec, Map<String, String> annotations, List<ContainerView> containers, List<FieldError> errors) {
        refuseTrue("spec.hostPID", spec.getHostPID(), "every process of the node, other tenants' GPU processes among "
                + "them, would be visible and, as the same user, traceable", errors);
        refuseTrue("spec.hostIPC", spec.getHostIPC(), "the node's System V shared memory and message queues", errors);
        refuseTrue("spec.hostNetwork", spec.getHostNetwork(), "the node's loopback-only services and abstract UNIX sockets, "
                + "and no NetworkPolicy applies to it", errors);
        refuseTrue("spec.shareProcessNamespace", spec.getShareProcessNamespace(), "every container would see the GPU "
                + "container's processes, and /proc/<pid>/root and /proc/<pid>/mem reach its mounts and memory", errors);
        PodSecurityContext psc = spec.getSecurityContext();
        SeccompProfile podProfile = psc == null ? null : psc.getSeccompProfile();
        if (podProfile != null && UNCONFINED.equals(podProfile.getType())) {
            errors.add(new FieldError("spec.securityContext.seccompProfile.type", UNCONFINED, PROFILES));
        }
        annotations.forEach((key, value) -> {
            if ((key.equals(POD_SECCOMP_ANNOTATION) || key.startsWith(CONTAINER_SECCOMP_ANNOTATION))
                    && value != null && "unconfined".equals(value.strip())) {
                errors.add(new FieldError("metadata.annotations[" + PodValidator.clip(key) + "]", "unconfined",
                        "runtime/default, docker/default or localhost/<profile> in a pod with a Dilu GPU share, or no such "
                                + "annotation (unconfined, a process can create a user namespace and mount over the hook)"));
            }
        });
        boolean podHasOne = podProfile != null || annotations.containsKey(POD_SECCOMP_ANNOTATION);
        if (!podHasOne && containers.stream().anyMatch(c -> !hasOwnProfile(c, annotations))) {
            errors.add(new FieldError("spec.securityContext.seccompProfile.type", "unset", "RuntimeDefault or Localhost, here "
                    + "or on each container, in a pod with a Dilu GPU share (the mutating webhook sets RuntimeDefault "
                    + "where the pod sets none; without one a container runs unconfined)"));
        }
    }

    /**
     * One container of a pod with a Dilu share, of any kind.
     *
     * @param gpu the container has the share itself
     * @param privilegedAllowed the namespace has dilu.io/allow-privileged=true
     */
    static void container(ContainerView c, boolean gpu, boolean privilegedAllowed, List<FieldError> errors) {
        SecurityContext sc = c.securityContext();
        // Kubernetes before 1.23 refuses any securityContext on an ephemeral container, so one cannot drop anything;
        // it holds no share (no device, no grant page), and is judged on what it adds.
        if (c.kind() != ContainerView.Kind.EPHEMERAL) {
            List<String> missing = DROPPED.stream().filter(cap -> !dropped(sc, cap)).toList();
            if (!missing.isEmpty()) {
                List<String> drop = sc == null || sc.getCapabilities() == null || sc.getCapabilities().getDrop() == null
                        ? List.of() : sc.getCapabilities().getDrop();
                errors.add(new FieldError(c.at() + ".securityContext.capabilities.drop",
                        drop.isEmpty() ? "unset" : PodValidator.clip(drop.toString()),
                        "a list with " + String.join(" and ", DROPPED) + " (or ALL) in a pod with a Dilu GPU share (the "
                                + "mutating webhook adds them; SYS_CHROOT: " + REACHING.get("SYS_CHROOT") + ")"));
            }
        }
        if (sc == null) {
            return;
        }
        if (Boolean.TRUE.equals(sc.getPrivileged()) && !privilegedAllowed) {
            errors.add(new FieldError(c.at() + ".securityContext.privileged", "true", (gpu
                    ? "false for a container with a GPU share (a privileged container can bypass the hook)"
                    : "false in a pod with a Dilu GPU share (a privileged container has every device and capability of the "
                            + "node, the GPU container's mounts and processes within reach)")
                    + "; label the namespace dilu.io/allow-privileged=true to allow it"));
        }
        List<String> added = sc.getCapabilities() == null || sc.getCapabilities().getAdd() == null ? List.of()
                : sc.getCapabilities().getAdd();
        for (int i = 0; i < added.size(); i++) {
            String bare = canonical(added.get(i));
            String reach = REACHING.get(bare);
            if (reach != null) {
                errors.add(new FieldError(c.at() + ".securityContext.capabilities.add[" + i + "]", PodValidator.clip(added.get(i)),
                        "none of " + String.join(", ", REACHING.keySet()) + " in a pod with a Dilu GPU share (" + bare + ": "
                                + reach + ")"));
            }
        }
        if (sc.getProcMount() != null && !"Default".equals(sc.getProcMount())) {
            errors.add(new FieldError(c.at() + ".securityContext.procMount", PodValidator.clip(sc.getProcMount()),
                    "Default in a pod with a Dilu GPU share (an unmasked /proc opens the node's kernel interfaces)"));
        }
        if (sc.getSeccompProfile() != null && UNCONFINED.equals(sc.getSeccompProfile().getType())) {
            errors.add(new FieldError(c.at() + ".securityContext.seccompProfile.type", UNCONFINED, PROFILES));
        }
    }

    /** A capability as runtimes read it: SYS_ADMIN, CAP_SYS_ADMIN and sys_admin alike; an alias as what it reads as. */
    static String canonical(String capability) {
        String cap = capability == null ? "" : capability.strip().toUpperCase(Locale.ROOT);
        String bare = cap.startsWith("CAP_") ? cap.substring(4) : cap;
        return ALIASES.getOrDefault(bare, bare);
    }

    /**
     * Whether the container's securityContext drops {@code capability} (itself, or ALL) as every runtime reads the
     * list, not as a lenient reader would: containerd drops {@code "CAP_" + upper case of the name} (and everything
     * for a name whose upper case is {@code ALL}), CRI-O the same unless the name already starts with {@code CAP_}.
     * So only the bare name, in any case, with nothing around it, drops the capability on both; {@code CAP_SYS_CHROOT},
     * {@code CHROOT}, {@code CAP_ALL} or {@code " SYS_CHROOT"} drop nothing on at least one, and do not count here (the
     * mutating webhook adds the bare name beside them, and validation refuses a list without it).
     */
    static boolean dropped(SecurityContext sc, String capability) {
        if (sc == null || sc.getCapabilities() == null || sc.getCapabilities().getDrop() == null) {
            return false;
        }
        return sc.getCapabilities().getDrop().stream().filter(d -> d != null)
                .map(d -> d.toUpperCase(Locale.ROOT)).anyMatch(d -> d.equals(capability) || d.equals("ALL"));
    }

    /** A profile of the container's own: its field, or the deprecated annotation the kubelet reads before the pod's. */
    private static boolean hasOwnProfile(ContainerView c, Map<String, String> annotations) {
        return c.securityContext() != null && c.securityContext().getSeccompProfile() != null
                || annotations.containsKey(CONTAINER_SECCOMP_ANNOTATION + c.name());
    }

    private static void refuseTrue(String field, Boolean value, String why, List<FieldError> errors) {
        if (Boolean.TRUE.equals(value)) {
            errors.add(new FieldError(field, "true", "false in a pod with a Dilu GPU share (" + why + ")"));
        }
    }
}
