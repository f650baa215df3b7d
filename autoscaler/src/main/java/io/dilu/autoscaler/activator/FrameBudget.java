package io.dilu.autoscaler.activator;

import java.time.Duration;
import java.time.Instant;

/**
 * What one connection may still send: a budget of frames and one of bytes, each refilled continuously at its rate per
 * second and holding at most one second's worth. A frame is taken whole from both or from neither. Not thread-safe
 * (one connection's frames arrive on its I/O thread, one after the other); time is passed in.
 */
final class FrameBudget {

    private static final double NANOS_PER_SECOND = 1e9;

    private final double framesPerSecond;
    private final double bytesPerSecond;
    private double frames;
    private double bytes;
    private Instant refilled;

    /**
     * A full budget at {@code now}.
     *
     * @param framesPerSecond frames a second (at least 1)
     * @param bytesPerSecond bytes a second (at least the largest frame, so that any frame allowed at all can pass)
     */
    FrameBudget(int framesPerSecond, long bytesPerSecond, Instant now) {
        this.framesPerSecond = framesPerSecond;
        this.bytesPerSecond = bytesPerSecond;
        this.frames = framesPerSecond;
        this.bytes = bytesPerSecond;
        this.refilled = now;
    }

    /** Takes one frame of {@code size} bytes if both budgets hold it at {@code now}; false (nothing taken) otherwise. */
    boolean take(long size, Instant now) {
        refill(now);
        if (frames < 1 || bytes < size) {
            return false;
        }
        frames -= 1;
        bytes -= size;
        return true;
    }

    private void refill(Instant now) {
        if (!now.isAfter(refilled)) {
            return; // a clock that stepped back refills nothing, and takes nothing back
        }
        Duration since = Duration.between(refilled, now);
        double seconds = since.getSeconds() >= 1 ? 1 : since.toNanos() / NANOS_PER_SECOND;
        frames = Math.min(framesPerSecond, frames + seconds * framesPerSecond);
        bytes = Math.min(bytesPerSecond, bytes + seconds * bytesPerSecond);
        refilled = now;
    }
}
