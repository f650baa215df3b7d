package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The NVIDIA container toolkit's environment variables that hand a container GPUs, other devices of the node or
 * driver capabilities (NVIDIA/nvidia-container-toolkit {@code internal/config/image/envvars.go}, {@code cuda_image.go},
 * {@code internal/modifier/cdi.go}). With the toolkit's defaults a container that sets
 * {@code NVIDIA_VISIBLE_DEVICES=all} gets every GPU of the node, whatever it asked the scheduler for; so a pod may set
 * them only as below, on any container, in every namespace admission sees. An image's own {@code ENV} is out of
 * sight here: the node closes that route ({@code accept-nvidia-visible-devices-envvar-when-unprivileged = false},
 * docs/webhook.md).
 *
 * <p>What each container may set depends on how it gets GPUs:
 * <ul>
 *   <li>a Dilu share: no device variable (the node agent sets {@code NVIDIA_VISIBLE_DEVICES} at Allocate, and the
 *       kubelet puts the pod's own after it, so a pod's value would win); driver capabilities only
 *       {@code compute} and {@code utility} (graphics and video engines are not the hook's to throttle);
 *   <li>whole GPUs ({@code nvidia.com/gpu}): not the GPU list or MIG administration (NVIDIA's device plugin sets
 *       the list); the rest is the device plugin's business;
 *   <li>no GPU: {@code NVIDIA_VISIBLE_DEVICES} only as a written {@code void}, {@code none} or empty (the toolkit
 *       then hands out no GPU), nothing else, {@code CUDA_VERSION} included (an image with it and without
 *       {@code NVIDIA_REQUIRE_CUDA} is "legacy", and a legacy image with no device list gets all GPUs).
 * </ul>
 * A value the pod does not write ({@code valueFrom}, an {@code envFrom} key, a {@code $(VAR)} reference) is
 * judged as the worst it could be.
 */
final class ToolkitEnv {

    private ToolkitEnv() {}

    static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";
    static final String DRIVER_CAPABILITIES = "NVIDIA_DRIVER_CAPABILITIES";
    static final String MIG_CONFIG_DEVICES = "NVIDIA_MIG_CONFIG_DEVICES";
    static final String MIG_MONITOR_DEVICES = "NVIDIA_MIG_MONITOR_DEVICES";
    static final String CUDA_VERSION = "CUDA_VERSION";
    /** Devices of the node beside the GPUs: IMEX channels, GPUDirect Storage, MOFED, GDRCopy, NVSwitches. */
    static final List<String> NODE_DEVICES = List.of("NVIDIA_IMEX_CHANNELS", "NVIDIA_GDS", "NVIDIA_MOFED", "NVIDIA_GDRCOPY",
            "NVIDIA_NVSWITCH");
    /** Every variable judged here. */
    static final List<String> NAMES = names();
    /** Values of NVIDIA_VISIBLE_DEVICES under which the toolkit hands out no GPU (NVIDIA's docs; devices.go). */
    static final Set<String> NO_GPU = Set.of("", "void", "none");
    /** Driver capabilities a container with a Dilu share may ask for. */
    static final Set<String> SHARE_CAPABILITIES = Set.of("compute", "utility");

    private static List<String> names() {
        List<String> all = new ArrayList<>(List.of(VISIBLE_DEVICES, DRIVER_CAPABILITIES, MIG_CONFIG_DEVICES, MIG_MONITOR_DEVICES));
        all.addAll(NODE_DEVICES);
        all.add(CUDA_VERSION);
        return List.copyOf(all);
    }

    /** NVIDIA's device plugin's resource: whole GPUs. */
    static final String WHOLE_GPU = "nvidia.com/gpu";

    /**
     * The most ConfigMaps one review may need read: each is an API call, and the review must be answered within the
     * webhook's timeout (the uncovered namespaces' webhook lets a pod through when it is not).
     */
    static final int MAX_CONFIG_MAP_READS = 16;

    /** How a container gets GPUs. */
    enum Gpus { DILU_SHARE, WHOLE, NONE }

    static Gpus gpus(ContainerView c) {
        if (c.kind() == ContainerView.Kind.CONTAINER && c.diluResources().containsKey(DiluNames.GPU_SM)) {
            return Gpus.DILU_SHARE;
        }
        Map<String, Quantity> limits = c.resources() == null ? null : c.resources().getLimits();
        Map<String, Quantity> requests = c.resources() == null ? null : c.resources().getRequests();
        return limits != null && limits.containsKey(WHOLE_GPU) || requests != null && requests.containsKey(WHOLE_GPU)
                ? Gpus.WHOLE : Gpus.NONE;
    }

    /**
     * What {@code name} may be on a container that gets GPUs as {@code gpus}: null when any value is fine (or the
     * toolkit does not read it), else what is allowed. {@link #allowedValue} says which written values pass.
     */
    static String rule(String name, Gpus gpus) {
        if (!NAMES.contains(name)) {
            return null;
        }
        return switch (gpus) {
            case DILU_SHARE -> name.equals(DRIVER_CAPABILITIES)
                    ? "compute, utility or both, written in the pod, on a container with a Dilu GPU share (graphics, "
                            + "video and display work is not the hook's to throttle)"
                    : name.equals(CUDA_VERSION) ? null
                    : "absent on a container with a Dilu GPU share (the node agent hands it its GPU at Allocate; "
                            + "the pod's own " + name + " would override or widen that)";
            case WHOLE -> name.equals(VISIBLE_DEVICES) || name.equals(MIG_CONFIG_DEVICES) || name.equals(MIG_MONITOR_DEVICES)
                    ? "absent on a container with nvidia.com/gpu (its device plugin hands it its GPUs; the pod's own "
                            + name + " would widen that)"
                    : null;
            case NONE -> name.equals(VISIBLE_DEVICES)
                    ? "void, none or empty, written in the pod, on a container without a GPU (any other value hands it "
                            + "GPUs of the node with the NVIDIA container toolkit's defaults)"
                    : "absent on a container without a GPU (the NVIDIA container toolkit reads it to hand out "
                            + (name.equals(CUDA_VERSION) ? "every GPU to a legacy image" : "devices of the node") + ")";
        };
    }

    /** Whether a value written in the pod passes where {@link #rule} is not null. */
    static boolean allowedValue(String name, Gpus gpus, String value) {
        String v = value == null ? "" : value.strip();
        if (gpus == Gpus.NONE && name.equals(VISIBLE_DEVICES)) {
            return NO_GPU.contains(v);
        }
        if (gpus == Gpus.DILU_SHARE && name.equals(DRIVER_CAPABILITIES)) {
            return !v.isEmpty() && Arrays.stream(v.split(",", -1)).map(String::strip).allMatch(SHARE_CAPABILITIES::contains);
        }
        return false;
    }

    /**
     * What the webhook read of the ConfigMaps a pod's envFrom names: their keys by name, and those it could not
     * read with the reason. A ConfigMap in neither was not found.
     */
    record ConfigMaps(Map<String, Set<String>> keys, Map<String, String> unreadable) {
        static final ConfigMaps NONE = new ConfigMaps(Map.of(), Map.of());

        ConfigMaps {
            keys = Map.copyOf(keys);
            unreadable = Map.copyOf(unreadable);
        }
    }

    /** The ConfigMaps whose keys decide whether {@code containers} are admitted: those envFrom'd with a prefix that could make a judged name. */
    static Set<String> configMapsToRead(List<ContainerView> containers) {
        Set<String> names = new TreeSet<>();
        for (ContainerView c : containers) {
            Gpus gpus = gpus(c);
            for (EnvFromSource from : c.envFrom()) {
                if (from != null && from.getConfigMapRef() != null && from.getConfigMapRef().getName() != null
                        && !reachable(from.getPrefix(), gpus).isEmpty()) {
                    names.add(from.getConfigMapRef().getName());
                }
            }
        }
        return names;
    }

    /** The judged names a prefix followed by some key can make that this container may not have by a value it does not write. */
    static List<String> reachable(String prefix, Gpus gpus) {
        String p = prefix == null ? "" : prefix;
        return NAMES.stream().filter(n -> n.length() > p.length() && n.startsWith(p) && rule(n, gpus) != null).toList();
    }

    /**
     * Everything wrong with the toolkit variables of {@code containers}.
     *
     * @param secretsRefused envFrom Secrets with a prefix that could make a judged name are refused (a pod with a
     *     Dilu share: it will run on a GPU node; the webhook does not read Secrets)
     */
    static void check(List<ContainerView> containers, ConfigMaps configMaps, boolean secretsRefused, List<FieldError> errors) {
        for (ContainerView c : containers) {
            Gpus gpus = gpus(c);
            for (EnvVar e : c.env()) {
                String name = e == null || e.getName() == null ? "" : e.getName();
                String rule = rule(name, gpus);
                if (rule == null) {
                    continue;
                }
                boolean written = e.getValueFrom() == null;
                if (!written || !allowedValue(name, gpus, e.getValue())) {
                    errors.add(new FieldError(c.at() + ".env[" + name + "]", PodValidator.shown(e), rule));
                }
            }
            for (int i = 0; i < c.envFrom().size(); i++) {
                envFrom(c, i, gpus, configMaps, secretsRefused, errors);
            }
        }
    }

    private static void envFrom(ContainerView c, int i, Gpus gpus, ConfigMaps configMaps, boolean secretsRefused,
            List<FieldError> errors) {
        EnvFromSource from = c.envFrom().get(i);
        if (from == null) {
            return;
        }
        String prefix = from.getPrefix() == null ? "" : from.getPrefix();
        List<String> reachable = reachable(prefix, gpus);
        if (reachable.isEmpty()) {
            return;
        }
        String at = c.at() + ".envFrom[" + i + "]";
        String names = String.join(", ", reachable);
        if (from.getSecretRef() != null) {
            if (secretsRefused) {
                errors.add(new FieldError(at, PodValidator.shown(from), "a prefix that cannot make " + names + " (e.g. APP_) "
                        + "in a pod with a Dilu GPU share: the webhook does not read Secrets, so their keys cannot be checked "
                        + "(or name each variable with valueFrom.secretKeyRef)"));
            }
            return;
        }
        String name = from.getConfigMapRef() == null ? null : from.getConfigMapRef().getName();
        if (name == null) {
            return;
        }
        String failure = configMaps.unreadable().get(name);
        if (failure != null) {
            errors.add(new FieldError(at, PodValidator.shown(from), "a ConfigMap the webhook can read to check for " + names
                    + " (it could not: " + PodValidator.clip(failure) + "; retry), or a prefix that cannot make them (e.g. APP_)"));
            return;
        }
        List<String> made = configMaps.keys().getOrDefault(name, Set.of()).stream().map(k -> prefix + k)
                .filter(reachable::contains).sorted().toList();
        if (!made.isEmpty()) {
            errors.add(new FieldError(at, PodValidator.shown(from) + ", making " + String.join(", ", made),
                    "a ConfigMap whose keys make none of " + names + " on this container, or a prefix that cannot make them "
                            + "(e.g. APP_): " + rule(made.getFirst(), gpus)));
        }
    }
}
