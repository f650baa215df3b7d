package io.dilu.deviceplugin.backstop;

import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which pod and container a process belongs to, from its {@code /proc/<pid>/cgroup}: the kubelet puts every
 * container in a cgroup named after its pod's UID and its container ID, and a process cannot leave it without
 * write access to the cgroup tree, which an unprivileged container does not have.
 *
 * <p>Every layout the kubelet and the runtimes make is read:
 *
 * <ul>
 *   <li>cgroupfs driver: {@code /kubepods/burstable/pod<uid>/<id>} (v1, one line per controller, or v2's single
 *       {@code 0::} line), {@code /kubepods/pod<uid>/<id>} for Guaranteed pods, optionally
 *       {@code <runtime>-<id>};</li>
 *   <li>systemd driver: {@code /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/
 *       cri-containerd-<id>.scope} (also {@code docker-}, {@code crio-}), under any prefix such as kind's
 *       {@code kubelet.slice/kubelet-kubepods.slice};</li>
 *   <li>containerd's {@code <pod slice>:cri-containerd:<id>} form;</li>
 *   <li>paths relative to the reader's cgroup namespace ({@code /../../kubepods…}), as a containerised agent on
 *       cgroup v2 sees them.</li>
 * </ul>
 *
 * <p>Lines that name different containers (a process cannot be in two) make the answer empty rather than a guess;
 * CRI-O's conmon ({@code crio-conmon-<id>}) is not the container.
 */
public final class Cgroups {

    private Cgroups() {}

    /** A container as the runtime names it: its pod's UID and its 64-hex-digit ID. */
    public record ContainerId(String podUid, String containerId) {
        @Override
        public String toString() {
            return "pod " + podUid + ", container " + containerId.substring(0, Math.min(12, containerId.length()));
        }
    }

    private static final String UID = "([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})";
    /** A pod's cgroup: {@code pod<uid>} (cgroupfs) or {@code …-pod<uid>.slice} (systemd). */
    private static final Pattern POD = Pattern.compile("^(?:.*-)?pod" + UID + "(?:\\.slice)?$");
    /** A container's: {@code <id>}, {@code <runtime>-<id>[.scope]}, or containerd's {@code <slice>:<runtime>:<id>}. */
    private static final Pattern CONTAINER = Pattern.compile(
            "^(?:(?:docker|crio|cri-containerd|containerd|cri-o)-)?([0-9a-f]{64})(?:\\.scope)?$");
    private static final Pattern COLON_FORM = Pattern.compile(
            "^(?:.*-)?pod" + UID + "\\.slice:(?:docker|crio|cri-containerd|containerd|cri-o):([0-9a-f]{64})$");

    /** The container of a process, from the whole content of its cgroup file; empty for none or an ambiguous one. */
    public static Optional<ContainerId> parse(String procCgroup) {
        Set<ContainerId> found = new HashSet<>();
        for (String line : procCgroup.split("\n")) {
            String[] fields = line.split(":", 3);
            if (fields.length == 3) {
                path(fields[2].strip()).ifPresent(found::add);
            }
        }
        return found.size() == 1 ? Optional.of(found.iterator().next()) : Optional.empty();
    }

    /** The container of one cgroup path, if it is one. */
    static Optional<ContainerId> path(String path) {
        String[] segments = path.split("/");
        for (int i = 0; i < segments.length; i++) {
            Matcher colon = COLON_FORM.matcher(segments[i]);
            if (colon.matches()) {
                return Optional.of(new ContainerId(uid(colon.group(1)), colon.group(2)));
            }
            Matcher pod = POD.matcher(segments[i]);
            if (pod.matches() && i + 1 < segments.length) {
                Matcher container = CONTAINER.matcher(segments[i + 1]);
                if (container.matches()) {
                    return Optional.of(new ContainerId(uid(pod.group(1)), container.group(1)));
                }
            }
        }
        return Optional.empty();
    }

    /** systemd escapes the UID's dashes as underscores in slice names. */
    private static String uid(String raw) {
        return raw.replace('_', '-');
    }

    /** A container ID as the pod's status gives it ({@code containerd://<id>}), or empty when it names none. */
    public static Optional<String> fromStatus(String containerId) {
        if (containerId == null) {
            return Optional.empty();
        }
        int at = containerId.indexOf("://");
        String id = at < 0 ? containerId : containerId.substring(at + 3);
        return id.matches("[0-9a-f]{64}") ? Optional.of(id) : Optional.empty();
    }
}
