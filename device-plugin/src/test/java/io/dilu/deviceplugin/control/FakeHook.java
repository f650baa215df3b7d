package io.dilu.deviceplugin.control;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;

/**
 * Writes a container's report page as its hook would — or as a tenant writing the page by hand would, which
 * the agent must survive: any value at any field.
 */
public final class FakeHook {

    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final MappedByteBuffer report;

    private FakeHook(MappedByteBuffer report) {
        this.report = report;
    }

    public static FakeHook of(ControlBlock block) throws IOException {
        try (FileChannel ch = FileChannel.open(block.directory().resolve(ControlBlock.REPORT_FILE), StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, ControlBlock.REPORT_SIZE);
            m.order(ByteOrder.nativeOrder());
            return new FakeHook(m);
        }
    }

    private static int device0() {
        return ControlBlock.REPORT_DEVICE;
    }

    /** Cumulative launches; a launch cycle when {@code klcNanos > 0}: what a hook writes. */
    public void report(long blocksLaunched, long klcNanos) {
        LONGS.setRelease(report, device0(), blocksLaunched);
        if (klcNanos > 0) {
            long n = (long) LONGS.getAcquire(report, device0() + 16);
            LONGS.setRelease(report, device0() + 32 + 8 * (int) Math.floorMod(n, ControlBlock.KLC_RING), klcNanos);
            LONGS.setRelease(report, device0() + 16, n + 1);
        }
    }

    /** The launch counter, as a tenant may set it. */
    public void setBlocksLaunched(long value) {
        LONGS.setRelease(report, device0(), value);
    }

    /** The cycle counter, as a tenant may set it (negative, backwards, anything). */
    public void setKlcCount(long value) {
        LONGS.setRelease(report, device0() + 16, value);
    }

    /** The count of refused memory allocations, as the hook keeps it (or a tenant sets it). */
    public void setMemoryRefusals(long value) {
        LONGS.setRelease(report, device0() + 24, value);
    }

    /** Every slot of the cycle ring. */
    public void fillKlcRing(long nanos) {
        for (int i = 0; i < ControlBlock.KLC_RING; i++) {
            LONGS.setRelease(report, device0() + 32 + 8 * i, nanos);
        }
    }

    /** A process slot's pid, as a tenant may set it. */
    public void setProcess(int slot, int pid) {
        INTS.setRelease(report, ControlBlock.REPORT_PROCESS + ControlBlock.REPORT_PROCESS_SIZE * slot, pid);
    }
}
