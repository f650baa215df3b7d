package io.dilu.webhook.admission;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * How two file paths relate, by their components after normalization ({@code //}, {@code .}, {@code ..} and a
 * trailing {@code /} resolved; a relative path taken from {@code /}), so that {@code /var/lib//dilu/./x} is seen
 * under {@code /var/lib/dilu}; and which host paths a hostPath volume may not name ({@link #refused}).
 *
 * <p>The webhook runs off the node, so it cannot follow the node's symbolic links: it judges the path as written.
 * What that leaves open is closed by refusing the routes every Linux host has (the kernel's views, below, and
 * {@code ..}, which the node resolves after a link where the webhook would resolve it before) and by the
 * configured list naming a directory under each of its names ({@code /run/dilu} beside {@code /var/run/dilu}); a
 * link a tenant plants on the node through a writable hostPath is beyond it (docs/webhook.md, "Host paths").
 */
final class HostPath {

    /**
     * The kernel's views of processes and devices, refused at and under: {@code /proc/<pid>/root} (and {@code cwd},
     * {@code fd/<n>}, {@code map_files}) is every process's root directory, the node's own among them, so
     * {@code /proc/1/root/var/lib/dilu} is the agent's directory by another name; {@code /sys} holds the GPUs' PCI
     * resources, which a root process maps without a device node the runtime's device rules would stop;
     * {@code /dev/fd}, {@code /dev/stdin}, {@code /dev/stdout} and {@code /dev/stderr} are links into
     * {@code /proc/self/fd} on every host, and {@code /dev/core} into {@code /proc/kcore} where it exists.
     */
    static final List<String> KERNEL_VIEWS = List.of("/proc", "/sys", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr",
            "/dev/core");

    private HostPath() {}

    /**
     * Whether a hostPath volume of {@code path} is refused: it steps back ({@code ..}), lies at or under one of the
     * {@link #KERNEL_VIEWS}, or is at, under or above one of {@code protectedPaths}.
     */
    static boolean refused(String path, List<String> protectedPaths) {
        return backsteps(path) || KERNEL_VIEWS.stream().anyMatch(k -> within(path, k))
                || protectedPaths.stream().anyMatch(p -> overlaps(path, p));
    }

    /** The set {@link #refused} allows, as a refusal states it. */
    static String allowed(List<String> protectedPaths) {
        return "a path neither at nor under " + String.join(", ", KERNEL_VIEWS) + " (the kernel's views of processes and "
                + "devices: /proc/<pid>/root reaches every file of the node), neither at, under nor above "
                + String.join(", ", protectedPaths) + " (the node agent's, the kubelet's and the container runtime's files, "
                + "the node's credentials and its libraries), and without '..' (the node resolves "
                + "it after its own links, which admission cannot see)";
    }

    /** A {@code ..} component anywhere. */
    static boolean backsteps(String path) {
        for (String part : path.split("/")) {
            if (part.equals("..")) {
                return true;
            }
        }
        return false;
    }

    /** {@code path} is {@code other}, under it or above it: a mount of one reaches into the other. */
    static boolean overlaps(String path, String other) {
        List<String> a = components(path);
        List<String> b = components(other);
        return a.size() <= b.size() ? prefix(a, b) : prefix(b, a);
    }

    /** {@code path} is {@code dir} or under it. */
    static boolean within(String path, String dir) {
        List<String> d = components(dir);
        List<String> p = components(path);
        return d.size() <= p.size() && prefix(d, p);
    }

    private static boolean prefix(List<String> shorter, List<String> longer) {
        return longer.subList(0, shorter.size()).equals(shorter);
    }

    static List<String> components(String path) {
        Deque<String> parts = new ArrayDeque<>();
        for (String part : path.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                parts.pollLast();
            } else {
                parts.addLast(part);
            }
        }
        return List.copyOf(parts);
    }
}
