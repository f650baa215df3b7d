package io.dilu.core.scaling;

import java.time.Instant;
import java.util.Arrays;

/**
 * The per-second request rates of one function over the last {@code size} seconds. A second with no
 * sample is absent, not zero: a missed scrape must not look like an idle function.
 */
public final class RateWindow {

    private final double[] rates;
    private final long[] seconds;
    /** The newest second recorded, and the first of the unbroken run of recorded seconds that ends with it. */
    private long newest = Long.MIN_VALUE;
    private long runStart = Long.MIN_VALUE;

    public RateWindow(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("size must be at least 1, got " + size);
        }
        rates = new double[size];
        seconds = new long[size];
        Arrays.fill(seconds, Long.MIN_VALUE);
    }

    /** The window's length in seconds (one sample each). */
    public int size() {
        return rates.length;
    }

    /**
     * Records the rate of the second containing {@code at}; a second recorded twice keeps the latest, and a second
     * already out of the window ending with the newest recorded is ignored.
     */
    public void record(Instant at, double rps) {
        if (!(rps >= 0) || Double.isInfinite(rps)) {
            throw new IllegalArgumentException("rps must be finite and >= 0, got " + rps);
        }
        long second = at.getEpochSecond();
        if (newest != Long.MIN_VALUE && second <= newest - rates.length) {
            return; // already out of the window: its slot holds a newer second
        }
        if (newest != Long.MIN_VALUE && second == newest + 1) {
            newest = second;
        } else if (second > newest) {
            newest = second; // after a gap (or the first): a new run
            runStart = second;
        }
        int slot = (int) Math.floorMod(second, (long) rates.length);
        seconds[slot] = second;
        rates[slot] = rps;
    }

    /** The samples of the window ending with the second of {@code now}, oldest first not guaranteed. */
    public double[] samples(Instant now) {
        long newest = now.getEpochSecond();
        long oldest = newest - rates.length + 1;
        if (this.newest == newest && runStart <= oldest) {
            // Every second of the window recorded (a scrape every tick, the usual case): every slot holds one of them.
            return rates.clone();
        }
        int n = 0;
        for (long s : seconds) {
            if (s >= oldest && s <= newest) {
                n++;
            }
        }
        double[] out = new double[n]; // one allocation: this runs for every function every second
        n = 0;
        for (int i = 0; i < rates.length; i++) {
            if (seconds[i] >= oldest && seconds[i] <= newest) {
                out[n++] = rates[i];
            }
        }
        return out;
    }

    /** The samples of the latest {@code count} seconds ending with the second of {@code now} (at most the window). */
    public double[] recent(Instant now, int count) {
        if (count < 0 || count > rates.length) {
            throw new IllegalArgumentException("count must be in 0.." + rates.length + ", got " + count);
        }
        long newest = now.getEpochSecond();
        double[] out = new double[count];
        int n = 0;
        for (long s = newest - count + 1; s <= newest; s++) {
            int slot = (int) Math.floorMod(s, (long) rates.length);
            if (seconds[slot] == s) {
                out[n++] = rates[slot];
            }
        }
        return n == count ? out : Arrays.copyOf(out, n);
    }

    /** The rate recorded for the second of {@code now}, or -1 when none. */
    public double latest(Instant now) {
        long second = now.getEpochSecond();
        int slot = (int) Math.floorMod(second, (long) rates.length);
        return seconds[slot] == second ? rates[slot] : -1;
    }
}
