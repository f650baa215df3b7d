package io.dilu.deviceplugin.backstop;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * What the kernel says about the node's processes, under {@code /proc} of the host's pid namespace (the agent runs
 * with {@code hostPID}). Every file here is written by the kernel, not by the process it describes. A process may
 * end between two reads: every method answers "nothing" for a process that is gone or that the agent may not read.
 * Files are read as ISO-8859-1, byte for byte: a process named with bytes that are not UTF-8 reads like any other.
 *
 * @param root the proc file system ({@code /proc})
 * @param cgroupRoot where the {@code <pid>/cgroup} files are read: {@code root}, except in tests that stand for
 *     the kubelet's cgroups with files of their own
 */
public record ProcFs(Path root, Path cgroupRoot) {

    public static ProcFs of(Path root) {
        return new ProcFs(root, root);
    }

    /** The pids of every process now. */
    public List<Long> pids() {
        List<Long> pids = new ArrayList<>();
        try (Stream<Path> list = Files.list(root)) {
            list.forEach(p -> {
                String name = p.getFileName().toString();
                if (!name.isEmpty() && name.length() < 11 && name.chars().allMatch(Character::isDigit)) {
                    pids.add(Long.parseLong(name));
                }
            });
        } catch (IOException e) {
            // an unreadable /proc: no process to tell about
        }
        return pids;
    }

    /**
     * When the process started, in clock ticks after boot (field 22 of {@code stat}): with the pid, it names one
     * process, never a later one that reuses the pid.
     */
    public OptionalLong startTicks(long pid) {
        return read(root.resolve(pid + "/stat")).map(ProcFs::startTicksOf).orElse(OptionalLong.empty());
    }

    /** Whether the process has ended and not yet been reaped (state Z, zombie, or X, dead), or is gone altogether. */
    public boolean ended(long pid) {
        return read(root.resolve(pid + "/stat")).map(ProcFs::endedOf).orElse(true);
    }

    static boolean endedOf(String stat) {
        int close = stat.lastIndexOf(')');
        String rest = close < 0 ? "" : stat.substring(close + 1).strip();
        return rest.isEmpty() || rest.charAt(0) == 'Z' || rest.charAt(0) == 'X';
    }

    static OptionalLong startTicksOf(String stat) {
        // The command name (field 2) may hold spaces and parentheses: the fields follow its last ')'.
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            return OptionalLong.empty();
        }
        String[] fields = stat.substring(close + 1).strip().split(" ");
        // fields[0] is field 3 (state); field 22 is fields[19].
        if (fields.length < 20) {
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(Long.parseUnsignedLong(fields[19]));
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** The container the process is in, from its cgroup. */
    public Optional<Cgroups.ContainerId> container(long pid) {
        return read(cgroupRoot.resolve(pid + "/cgroup")).flatMap(Cgroups::parse);
    }

    /** The process's pid in its own pid namespace: the last of the {@code NSpid} line of {@code status}. */
    public OptionalLong namespacePid(long pid) {
        Optional<String> status = read(root.resolve(pid + "/status"));
        if (status.isEmpty()) {
            return OptionalLong.empty();
        }
        for (String line : status.get().split("\n")) {
            if (line.startsWith("NSpid:")) {
                String[] ids = line.substring(6).strip().split("\\s+");
                try {
                    return OptionalLong.of(Long.parseLong(ids[ids.length - 1]));
                } catch (NumberFormatException e) {
                    return OptionalLong.empty();
                }
            }
        }
        return OptionalLong.of(pid); // a kernel without pid namespaces
    }

    /** Each line of the process's memory map, as the kernel writes it; false when it cannot be read. */
    public boolean maps(long pid, Consumer<String> line) {
        try (BufferedReader r = Files.newBufferedReader(root.resolve(pid + "/maps"), StandardCharsets.ISO_8859_1)) {
            for (String l = r.readLine(); l != null; l = r.readLine()) {
                line.accept(l);
            }
            return true;
        } catch (IOException | java.io.UncheckedIOException e) {
            return false;
        }
    }

    private static Optional<String> read(Path file) {
        try {
            return Optional.of(Files.readString(file, StandardCharsets.ISO_8859_1));
        } catch (IOException | java.io.UncheckedIOException e) {
            return Optional.empty();
        }
    }
}
