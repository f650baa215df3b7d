package io.dilu.webhook.admission;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * How two file paths relate, by their components after normalization ({@code //}, {@code .}, {@code ..} and a
 * trailing {@code /} resolved; a relative path taken from {@code /}), so that {@code /var/lib//dilu/./x} is seen
 * under {@code /var/lib/dilu}. Symbolic links on the host are not followed: what they reach is for the
 * configured list to name (e.g. {@code /run/dilu} beside {@code /var/run/dilu}).
 */
final class HostPath {

    private HostPath() {}

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
