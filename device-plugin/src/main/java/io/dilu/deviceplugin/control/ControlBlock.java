package io.dilu.deviceplugin.control;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The agent's side of one container's control block: the grant page it writes (mounted read-only into the
 * container) and the report page the hook writes. The layout is {@code hook-native/include/dilu_control.h},
 * version 4; the offsets here are checked against the C ones by {@code ControlBlockIT}, which runs the
 * real hook against a block made by this class. Everything read from the report page is the tenant's to
 * write: readers treat it as hostile ({@code ReportReader} validates it).
 *
 * <p>Counters are read and written with acquire/release semantics through VarHandles, matching the C
 * side's atomics. One writer per field: the agent for the grant page, the hook for the report page.
 */
public final class ControlBlock implements AutoCloseable {

    public static final int MAGIC = 0x44494c55;
    public static final int VERSION = 4;
    public static final int MAX_DEVICES = 8;
    public static final int KLC_RING = 64;
    public static final int MAX_PROCESSES = 32;
    public static final String GRANT_FILE = "grant";
    public static final String REPORT_FILE = "report";
    /** An SLO container's cycle page ({@code dilu_cycle_page}), beside its grant and report pages. */
    public static final String CYCLE_FILE = "cycle";
    /** The class prefixes of a cycle page's name in a neighbours directory (dilu_control.h's DILU_NEIGHBOUR_*). */
    static final String NEIGHBOUR_SLO = "slo-";
    static final String NEIGHBOUR_BEST_EFFORT = "be-";

    /**
     * The name a container's cycle page is linked under in its GPU's neighbours directory: its class, which orders
     * its cycles against its neighbours' (an SLO container's go first), then {@code id}.
     */
    public static String neighbourName(boolean sloSensitive, String id) {
        return (sloSensitive ? NEIGHBOUR_SLO : NEIGHBOUR_BEST_EFFORT) + id;
    }
    public static final int CYCLE_SIZE = 24;
    static final int CYCLE_STARTED = 16;

    static final int HEADER = 16;
    static final int GRANT_HEARTBEAT = 16;
    static final int GRANT_DEVICES = 24;
    static final int GRANT_PERIOD = 28;
    static final int GRANT_DEVICE = 32;
    static final int GRANT_DEVICE_SIZE = 48;
    public static final int GRANT_SIZE = GRANT_DEVICE + GRANT_DEVICE_SIZE * MAX_DEVICES;
    static final int REPORT_DEVICES = 16;
    static final int REPORT_DEVICE = 24;
    static final int REPORT_DEVICE_SIZE = 32 + 8 * KLC_RING;
    static final int REPORT_PROCESS = REPORT_DEVICE + REPORT_DEVICE_SIZE * MAX_DEVICES;
    static final int REPORT_PROCESS_SIZE = 8 + 8 * MAX_DEVICES;
    public static final int REPORT_SIZE = REPORT_PROCESS + REPORT_PROCESS_SIZE * MAX_PROCESSES;

    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final Path dir;
    private final MappedByteBuffer grant;
    private final MappedByteBuffer report;

    private ControlBlock(Path dir, MappedByteBuffer grant, MappedByteBuffer report) {
        this.dir = dir;
        this.grant = grant;
        this.report = report;
    }

    /**
     * Creates (or resets) the block of one container in {@code dir}: a fresh grant page with nothing granted
     * and a fresh report page, both world-readable so the container's user can map them.
     */
    public static ControlBlock create(Path dir, int devices) throws IOException {
        if (devices < 1 || devices > MAX_DEVICES) {
            throw new IllegalArgumentException("devices must be in 1.." + MAX_DEVICES + ", got " + devices);
        }
        Files.createDirectories(dir);
        MappedByteBuffer grant = map(dir.resolve(GRANT_FILE), GRANT_SIZE, true);
        MappedByteBuffer report = map(dir.resolve(REPORT_FILE), REPORT_SIZE, true);
        header(grant, GRANT_SIZE, 1);
        header(report, REPORT_SIZE, 2);
        INTS.setRelease(grant, GRANT_DEVICES, devices);
        INTS.setRelease(report, REPORT_DEVICES, devices);
        // Readable by the container's user; the report page must also be writable by it.
        Files.setPosixFilePermissions(dir.resolve(GRANT_FILE), PosixFilePermissions.fromString("rw-r--r--"));
        Files.setPosixFilePermissions(dir.resolve(REPORT_FILE), PosixFilePermissions.fromString("rw-rw-rw-"));
        return new ControlBlock(dir, grant, report);
    }

    /** Opens an existing block after an agent restart; refuses one of another layout. */
    public static ControlBlock open(Path dir) throws IOException {
        MappedByteBuffer grant = map(dir.resolve(GRANT_FILE), GRANT_SIZE, false);
        MappedByteBuffer report = map(dir.resolve(REPORT_FILE), REPORT_SIZE, false);
        check(grant, GRANT_SIZE, 1, dir.resolve(GRANT_FILE));
        check(report, REPORT_SIZE, 2, dir.resolve(REPORT_FILE));
        return new ControlBlock(dir, grant, report);
    }

    private static MappedByteBuffer map(Path file, int size, boolean reset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            if (reset) {
                ch.truncate(0);
            }
            if (ch.size() < size) {
                if (!reset) {
                    throw new IOException(file + " is truncated: " + ch.size() + " bytes, expected " + size);
                }
                ch.write(java.nio.ByteBuffer.allocate(size), 0);
            }
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            m.order(ByteOrder.nativeOrder());
            return m;
        }
    }

    private static void header(MappedByteBuffer page, int size, int kind) {
        INTS.set(page, 4, VERSION);
        INTS.set(page, 8, size);
        INTS.set(page, 12, kind);
        INTS.setRelease(page, 0, MAGIC); // last: a reader that sees the magic sees a whole header
    }

    private static void check(MappedByteBuffer page, int size, int kind, Path file) throws IOException {
        int magic = (int) INTS.getAcquire(page, 0);
        int version = (int) INTS.get(page, 4);
        if (magic != MAGIC || version != VERSION || (int) INTS.get(page, 8) != size || (int) INTS.get(page, 12) != kind) {
            throw new IOException(file + " is not a version " + VERSION + " Dilu control page (magic "
                    + Integer.toHexString(magic) + ", version " + version + ")");
        }
    }

    public Path directory() {
        return dir;
    }

    /**
     * Gives the container a cycle page, where its hook publishes its launch cycles for its neighbours; returns the
     * file, for the neighbours' directories. Idempotent: an existing page is reset.
     */
    public Path createCyclePage() throws IOException {
        Path file = dir.resolve(CYCLE_FILE);
        MappedByteBuffer page = map(file, CYCLE_SIZE, true);
        header(page, CYCLE_SIZE, 3);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-rw-rw-"));
        return file;
    }

    // ---- grant page: written by the agent ----

    private static int grantDevice(int device) {
        return GRANT_DEVICE + GRANT_DEVICE_SIZE * device;
    }

    public long tokensGranted(int device) {
        return (long) LONGS.getAcquire(grant, grantDevice(device));
    }

    public void grantTokens(int device, long cumulative) {
        LONGS.setRelease(grant, grantDevice(device), cumulative);
    }

    public void setMemoryLimit(int device, long bytes) {
        LONGS.setRelease(grant, grantDevice(device) + 8, bytes);
    }

    public long memoryLimit(int device) {
        return (long) LONGS.getAcquire(grant, grantDevice(device) + 8);
    }

    public void setState(int device, int state) {
        INTS.setRelease(grant, grantDevice(device) + 16, state);
    }

    /** The controller state last written for the device ({@code ControllerState} ordinal). */
    public int state(int device) {
        return (int) INTS.getAcquire(grant, grantDevice(device) + 16);
    }

    public void setThrottled(int device, boolean throttled) {
        INTS.setRelease(grant, grantDevice(device) + 20, throttled ? 1 : 0);
    }

    /** This period's refill: the rate at which the hook refills itself, for a while, when the agent is late. */
    public void setTokensPerPeriod(int device, long tokens) {
        LONGS.setRelease(grant, grantDevice(device) + 24, tokens);
    }

    public long tokensPerPeriod(int device) {
        return (long) LONGS.getAcquire(grant, grantDevice(device) + 24);
    }

    /**
     * Paces this period's refill: the grant written is its first part, and the hook releases the rest itself
     * in {@code steps} equal parts from the heartbeat on, up to {@code until}, so the agent wakes once a period.
     * {@code steps ≤ 1} or {@code until ≤} the grant: released at once.
     */
    public void setPacedRefill(int device, long until, int steps) {
        LONGS.setRelease(grant, grantDevice(device) + 32, until);
        INTS.setRelease(grant, grantDevice(device) + 40, steps);
    }

    public long pacedUntil(int device) {
        return (long) LONGS.getAcquire(grant, grantDevice(device) + 32);
    }

    /**
     * How long, at most, a launch of the container waits for its SLO neighbours' launch cycles in flight and for its
     * own earlier work on the kernel's stream ({@code dilu_grant_device.yield_us}); 0: it does not wait.
     */
    public void setYieldMicros(int device, int micros) {
        INTS.setRelease(grant, grantDevice(device) + 44, micros);
    }

    public int yieldMicros(int device) {
        return (int) INTS.getAcquire(grant, grantDevice(device) + 44);
    }

    /** The agent's token period, for the hook's own refills while the agent is late. */
    public void setPeriodMicros(int micros) {
        INTS.setRelease(grant, GRANT_PERIOD, micros);
    }

    /** Tells the hook the agent is alive; {@code monotonicNanos} on the hook's clock (CLOCK_MONOTONIC). */
    public void heartbeat(long monotonicNanos) {
        LONGS.setRelease(grant, GRANT_HEARTBEAT, monotonicNanos);
    }

    // ---- report page: written by the hook ----

    private static int reportDevice(int device) {
        return REPORT_DEVICE + REPORT_DEVICE_SIZE * device;
    }

    public long blocksLaunched(int device) {
        return (long) LONGS.getAcquire(report, reportDevice(device));
    }

    public long memoryUsed(int device) {
        return (long) LONGS.getAcquire(report, reportDevice(device) + 8);
    }

    public long klcCount(int device) {
        return (long) LONGS.getAcquire(report, reportDevice(device) + 16);
    }

    /** Allocations the hook refused for not fitting the device's memory share, cumulative (0 from older hooks). */
    public long memoryRefusals(int device) {
        return (long) LONGS.getAcquire(report, reportDevice(device) + 24);
    }

    /**
     * The n-th (1-based) launch cycle, in nanoseconds, as the tenant wrote it; only the latest {@value #KLC_RING}
     * are kept. Any n is safe to ask for: a count the tenant made negative cannot index outside the ring.
     */
    public long klcNanos(int device, long n) {
        return (long) LONGS.getAcquire(report, reportDevice(device) + 32 + 8 * (int) Math.floorMod(n - 1, KLC_RING));
    }

    /** Pid of a process slot, 0 when free. */
    public int processId(int slot) {
        return (int) INTS.getAcquire(report, REPORT_PROCESS + REPORT_PROCESS_SIZE * slot);
    }

    @Override
    public void close() {
        // Mapped buffers are unmapped by the GC; nothing to release explicitly.
    }
}
