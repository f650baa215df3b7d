package io.dilu.deviceplugin.testing;

import io.dilu.deviceplugin.control.ControlBlock;

/**
 * The most a hook may have let its container launch by now, read from the grant page as the hook reads it
 * (hook-native/src/hook/launch.c, allowed_now): the cumulative grant, a paced refill up to its end, and the
 * refills it lends itself, at the latest rate for at most 200 periods, while the agent is late. An upper
 * bound: read after the launch counter, it can only be larger than what the hook saw.
 */
public final class HookAllowance {

    /** SELF_REFILL_PERIODS in launch.c. */
    public static final long SELF_REFILL_PERIODS = 200;

    private HookAllowance() {}

    public static long now(ControlBlock block, int device) {
        long granted = block.tokensGranted(device);
        long end = Math.max(granted, block.pacedUntil(device));
        long period = block.periodMicros() * 1_000L;
        long elapsed = System.nanoTime() - block.heartbeatNanos(); // the JVM's nanoTime is CLOCK_MONOTONIC on Linux
        if (period <= 0 || elapsed < period) {
            return end;
        }
        long missed = Math.min(SELF_REFILL_PERIODS, elapsed / period - 1);
        return end + missed * block.tokensPerPeriod(device);
    }
}
