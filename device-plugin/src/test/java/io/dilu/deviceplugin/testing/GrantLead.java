package io.dilu.deviceplugin.testing;

import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.time.Duration;

/**
 * How far a tenant's launches ran ahead of what the agent granted (to the end of the period, a paced refill
 * included), sampled while it runs, and how much of that the hook may have lent itself: while the agent is
 * late the hook refills at the latest rate, for at most 200 periods (hook-native/src/hook/launch.c), and the
 * tenant pays it back by waiting. Judged against the lateness the agent measured itself, so a busy machine
 * that delays the agent cannot fail a test, and a hook that runs ahead with a punctual agent still does.
 */
public final class GrantLead {

    /** SELF_REFILL_PERIODS in launch.c. */
    static final long SELF_REFILL_PERIODS = 200;

    private long worst = Long.MIN_VALUE;

    /** Reads the launch counter first: the grant read after it can only be larger, so a lead is never invented. */
    public void sample(ControlBlock block, int device) {
        long launched = block.blocksLaunched(device);
        long end = Math.max(block.tokensGranted(device), block.pacedUntil(device));
        worst = Math.max(worst, launched - end);
    }

    /** The largest lead sampled. */
    public long worst() {
        return worst;
    }

    /** The most the hook may have lent itself, at {@code ratePerPeriod}, given how late the agent's periods were. */
    public static long lendable(TokenManager manager, Duration period, long ratePerPeriod) {
        long[] late = manager.sortedLateness();
        long latest = late.length == 0 ? 0 : Math.max(0, late[late.length - 1]);
        return Math.min(SELF_REFILL_PERIODS, latest / period.toNanos() + 1) * ratePerPeriod;
    }
}
