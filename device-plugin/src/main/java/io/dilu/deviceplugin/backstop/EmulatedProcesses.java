package io.dilu.deviceplugin.backstop;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.placement.GpuDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * What the emulated GPUs' processes use, without trusting what tenants can write.
 *
 * <p><b>Who writes what.</b> An emulated GPU is one state file in the agent's emulator host directory
 * ({@code <emulator-host-dir>/gpu<N>/dilu-emu-gpu-<uid>}), mounted read-write into every container on that GPU: any
 * process of any of those containers can write any byte of it, and can replace, link or add files in that
 * directory. So the backstop takes from the kernel what it can:
 *
 * <ul>
 *   <li><b>Which processes are on the GPU</b>: those whose {@code /proc/<pid>/maps} maps a file of the GPU's
 *       directory, matched by device and inode (the directory is listed without following links, only regular
 *       files count, and every file seen is remembered, so renaming or unlinking the state file hides nothing);</li>
 *   <li><b>their memory</b>: the emulator mirrors each process's emulated GPU memory as the size of its own
 *       mappings of a memfd named {@code dilu-emu-memory-0} (hook-native's {@code shared.c}); only the kernel writes
 *       {@code maps}, and only the process itself changes its mappings, so a neighbour cannot make it look
 *       bigger;</li>
 *   <li><b>their SM use</b>: thread blocks run, from the process's slot in the state file — the one with its
 *       namespace pid and its start time, both as the kernel reports them. A neighbour on the same GPU can write
 *       that slot, so this figure is used for reports, never to end a process.</li>
 * </ul>
 *
 * <p>The state file is opened without following links and without blocking (a FIFO put in its place reads as
 * nothing), read once per round into a bounded buffer and checked before any field is used. What a tenant process
 * can always do on an emulated GPU is hide its own use, by writing the shared state instead of calling the
 * emulator: the emulator runs inside the tenant's process and is no more trustworthy than it. A real GPU's driver
 * keeps its accounting where tenants cannot write.
 */
public final class EmulatedProcesses implements GpuProcesses {

    private static final int MAX_LISTED = 4096;
    private static final int MAX_KNOWN = 65_536;
    static final String WITNESS = "/memfd:dilu-emu-memory-0";
    private static final int MAGIC = 0x454d5547;
    private static final int VERSION = 3;
    private static final int HEADER = 48;
    private static final int PROC_SIZE = 176;
    private static final int PROC_START = 104;
    private static final int PROC_BLOCKS = 112;
    private static final int MAX_PROCS = 128;
    private static final int MAX_DEVICES = 8;
    private static final int MAX_STATE_BYTES = 8 << 20;

    private final List<GpuDevice> gpus;
    private final Path root;
    private final ProcFs proc;
    private final double[] blocksPerSecond;
    private final Map<Key, Long> lastBlocks = new HashMap<>();
    /** Every file seen in a GPU's directory, by device and inode, to that GPU's index. */
    private final Map<FileId, Integer> known = new HashMap<>();
    private long lastReadNanos;

    /**
     * @param root the emulator host directory ({@code dilu.agent.emulator-host-dir})
     * @param blocksPerSecond per GPU, the thread blocks its whole token budget allows a second: its MaxTokens ÷ the
     *     period, the unit of an SM limit
     */
    public EmulatedProcesses(List<GpuDevice> gpus, Path root, ProcFs proc, double[] blocksPerSecond) {
        this.gpus = List.copyOf(gpus);
        this.root = root;
        this.proc = proc;
        this.blocksPerSecond = blocksPerSecond.clone();
    }

    private record Key(int gpu, long pid, long startTicks) {}

    /** A state file by device and inode, as /proc/<pid>/maps names a mapped file. */
    private record FileId(long major, long minor, long inode) {}

    /** A process slot of a state file, as a tenant may have left it. */
    private record Slot(long pid, long startTicks, long blocks) {}

    @Override
    public ShareBackstop.Measure measure() {
        return ShareBackstop.Measure.SM_SHARE;
    }

    /** The slots are the tenants' to write: a neighbour can make a process look busy. */
    @Override
    public boolean shareTrusted() {
        return false;
    }

    @Override
    public synchronized List<Use> read() {
        long now = System.nanoTime();
        double seconds = lastReadNanos == 0 ? Double.NaN : (now - lastReadNanos) / 1e9;
        lastReadNanos = now;
        Map<FileId, Path> listed = new HashMap<>();
        for (int g = 0; g < gpus.size(); g++) {
            stateFiles(g, listed);
        }
        List<Use> uses = new ArrayList<>();
        Map<Key, Long> blocksNow = new HashMap<>();
        Map<FileId, List<Slot>> slots = new HashMap<>();
        if (!known.isEmpty()) {
            for (long pid : proc.pids()) {
                Mapping m = mapping(pid);
                if (m.gpu < 0) {
                    continue;
                }
                OptionalLong start = proc.startTicks(pid);
                if (start.isEmpty()) {
                    continue; // gone since its maps were read
                }
                Key key = new Key(m.gpu, pid, start.getAsLong());
                double share = Double.NaN;
                // Slots only of files still in the directory: a file renamed or unlinked there is still the GPU its
                // processes contend on (matched above by its inode), but there is no path left to read it by.
                List<Slot> fileSlots = listed.containsKey(m.file)
                        ? slots.computeIfAbsent(m.file, f -> readSlots(listed.get(f), f.inode())) : null;
                OptionalLong blocks = blocksOf(fileSlots, proc.namespacePid(pid), start.getAsLong());
                if (blocks.isPresent()) {
                    blocksNow.put(key, blocks.getAsLong());
                    Long before = lastBlocks.get(key);
                    if (before != null && Double.isFinite(seconds) && seconds > 0) {
                        share = Math.max(0, blocks.getAsLong() - before) / (blocksPerSecond[m.gpu] * seconds);
                    }
                }
                uses.add(new Use(m.gpu, pid, start.getAsLong(), m.witnessBytes, share));
            }
        }
        lastBlocks.clear();
        lastBlocks.putAll(blocksNow);
        return uses;
    }

    @Override
    public synchronized List<Use> memory(java.util.Collection<Long> pids) {
        List<Use> uses = new ArrayList<>();
        for (long pid : pids) {
            Mapping m = mapping(pid);
            OptionalLong start = m.gpu < 0 ? OptionalLong.empty() : proc.startTicks(pid);
            if (start.isPresent()) {
                uses.add(new Use(m.gpu, pid, start.getAsLong(), m.witnessBytes, Double.NaN));
            }
        }
        return uses;
    }

    private static final class Mapping {
        int gpu = -1;
        FileId file;
        long witnessBytes;
    }

    /** Which emulated GPU a process maps, and the size of its memory witness there. */
    private Mapping mapping(long pid) {
        Mapping m = new Mapping();
        proc.maps(pid, line -> {
            // start-end perms offset major:minor inode [path]
            String[] f = line.split("\\s+", 6);
            if (f.length < 5) {
                return;
            }
            if (f.length == 6 && f[5].startsWith(WITNESS)) {
                m.witnessBytes += size(f[0]);
                return;
            }
            if ("0".equals(f[4])) {
                return;
            }
            FileId id = fileId(f[3], f[4]);
            Integer gpu = id == null ? null : known.get(id);
            if (gpu != null) {
                m.gpu = gpu;
                m.file = id;
            }
        });
        if (m.gpu < 0) {
            m.witnessBytes = 0;
        }
        return m;
    }

    private static long size(String range) {
        int dash = range.indexOf('-');
        try {
            return Long.parseUnsignedLong(range.substring(dash + 1), 16) - Long.parseUnsignedLong(range.substring(0, dash), 16);
        } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
            return 0;
        }
    }

    private static FileId fileId(String device, String inode) {
        int colon = device.indexOf(':');
        try {
            return new FileId(Long.parseLong(device.substring(0, colon), 16), Long.parseLong(device.substring(colon + 1), 16),
                    Long.parseUnsignedLong(inode));
        } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
            return null;
        }
    }

    /**
     * The files of GPU {@code g}'s directory: regular files only, never through a link, whatever their names (a
     * tenant may rename the state file). Each is remembered for as long as the agent runs, so that processes keep
     * being matched to the GPU after a tenant renamed or unlinked the file they map.
     */
    private void stateFiles(int g, Map<FileId, Path> listed) {
        Path dir = root.resolve("gpu" + g);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            int seen = 0;
            for (Path p : entries) {
                if (++seen > MAX_LISTED) {
                    break; // a tenant filling the directory does not make the agent list without end
                }
                BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                if (!a.isRegularFile()) {
                    continue;
                }
                long dev = (Long) Files.getAttribute(p, "unix:dev", LinkOption.NOFOLLOW_LINKS);
                long ino = (Long) Files.getAttribute(p, "unix:ino", LinkOption.NOFOLLOW_LINKS);
                FileId id = new FileId(major(dev), minor(dev), ino);
                listed.put(id, p);
                if (known.size() < MAX_KNOWN || known.containsKey(id)) {
                    known.put(id, g);
                }
            }
        } catch (IOException | RuntimeException e) {
            // a directory changing under the listing: what was read so far stands
        }
    }

    /** glibc's major() and minor() of a dev_t. */
    static long major(long dev) {
        return ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
    }

    static long minor(long dev) {
        return (dev & 0xff) | ((dev >>> 12) & ~0xffL);
    }

    /** The slots of one state file, or none when it is not one this agent understands. */
    private static List<Slot> readSlots(Path file, long inode) {
        if (file == null) {
            return List.of();
        }
        LibC c;
        try {
            c = LibC.INSTANCE;
        } catch (UnsatisfiedLinkError e) {
            return List.of();
        }
        int fd = c.open(file.toString(), LibC.O_RDONLY | LibC.O_NONBLOCK | LibC.O_NOFOLLOW | LibC.O_CLOEXEC);
        if (fd < 0) {
            return List.of();
        }
        try {
            // The file opened must be the one listed, not one swapped in since.
            Object opened = Files.getAttribute(Path.of("/proc/self/fd/" + fd), "unix:ino");
            if (!Long.valueOf(inode).equals(opened)) {
                return List.of();
            }
            byte[] header = new byte[HEADER];
            if (c.pread(fd, header, HEADER, 0) != HEADER) {
                return List.of();
            }
            ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.nativeOrder());
            int size = h.getInt(8);
            int offset = h.getInt(32);
            if (h.getInt(0) != MAGIC || h.getInt(4) != VERSION || h.getInt(36) != PROC_SIZE || h.getInt(40) != MAX_PROCS
                    || h.getInt(44) != MAX_DEVICES || size <= 0 || size > MAX_STATE_BYTES || offset < HEADER
                    || (long) offset + (long) MAX_PROCS * PROC_SIZE > size) {
                return List.of();
            }
            byte[] raw = new byte[MAX_PROCS * PROC_SIZE];
            if (c.pread(fd, raw, raw.length, offset) != raw.length) {
                return List.of();
            }
            ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder());
            List<Slot> out = new ArrayList<>();
            for (int i = 0; i < MAX_PROCS; i++) {
                int at = i * PROC_SIZE;
                int pid = b.getInt(at);
                if (pid > 0) {
                    out.add(new Slot(pid, b.getLong(at + PROC_START), b.getLong(at + PROC_BLOCKS)));
                }
            }
            return out;
        } catch (IOException | RuntimeException e) {
            return List.of();
        } finally {
            c.close(fd);
        }
    }

    /** The blocks of the slot that is this process: its namespace pid and its start time, both from the kernel. */
    private static OptionalLong blocksOf(List<Slot> slots, OptionalLong namespacePid, long startTicks) {
        if (slots == null || namespacePid.isEmpty()) {
            return OptionalLong.empty();
        }
        OptionalLong found = OptionalLong.empty();
        for (Slot s : slots) {
            if (s.pid() == namespacePid.getAsLong() && s.startTicks() == startTicks) {
                if (found.isPresent()) {
                    return OptionalLong.empty(); // two slots claim the process: a neighbour wrote one
                }
                found = OptionalLong.of(s.blocks());
            }
        }
        return found;
    }
}
