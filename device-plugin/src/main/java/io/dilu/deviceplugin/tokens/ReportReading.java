package io.dilu.deviceplugin.tokens;

import java.util.EnumSet;
import java.util.Set;

/**
 * One period's reading of a tenant's report page, validated. The page is the tenant's to write, so a value
 * its hook could not have written is not believed: the reading falls back to "nothing new" for that value and
 * names the fault, and the tenant's previous values stay the baseline.
 *
 * @param launched the launch counter to compare the next period with
 * @param launchedDelta thread blocks launched this period, never negative
 * @param klcCount the cycle counter to compare the next period with
 * @param klcMillis the latest kernel launch cycle completed this period, or NaN
 * @param faults what was wrong with the page this period, empty when nothing
 */
public record ReportReading(long launched, long launchedDelta, long klcCount, double klcMillis, Set<Fault> faults) {

    /** What a tenant's report page can get wrong. */
    public enum Fault {
        /** A counter went backwards (or negative). */
        COUNTER_BACKWARDS,
        /** More blocks in one period than any grant allows. */
        IMPLAUSIBLE_LAUNCHES,
        /** A launch cycle outside {@value #MIN_KLC_NANOS} ns .. {@value #MAX_KLC_NANOS} ns. */
        IMPLAUSIBLE_CYCLE,
        /** Reading the page failed outright. */
        UNREADABLE
    }

    /** Shortest launch cycle believed: a launch and a synchronisation take microseconds. */
    public static final long MIN_KLC_NANOS = 1_000;
    /** Longest launch cycle believed: a minute. */
    public static final long MAX_KLC_NANOS = 60_000_000_000L;

    public ReportReading {
        faults = faults.isEmpty() ? Set.of() : Set.copyOf(faults);
    }

    /**
     * Validates what was read this period against what was read the last.
     *
     * @param maxDelta most blocks one period can legitimately add (what the tenant was granted, plus room)
     * @param cycle the latest cycle's value as written, read only when the count moved
     */
    public static ReportReading of(long previousLaunched, long previousKlcCount, long launched, long klcCount,
            java.util.function.LongUnaryOperator cycle, long maxDelta) {
        Set<Fault> faults = EnumSet.noneOf(Fault.class);
        long delta = 0;
        long baseline = previousLaunched;
        if (launched < previousLaunched) {
            faults.add(Fault.COUNTER_BACKWARDS);
        } else if (launched - previousLaunched > maxDelta) {
            faults.add(Fault.IMPLAUSIBLE_LAUNCHES);
            delta = maxDelta;
            baseline = previousLaunched + maxDelta;
        } else {
            delta = launched - previousLaunched;
            baseline = launched;
        }
        double klc = Double.NaN;
        long cycles = previousKlcCount;
        if (klcCount < previousKlcCount) {
            faults.add(Fault.COUNTER_BACKWARDS);
        } else if (klcCount > previousKlcCount) {
            cycles = klcCount;
            long nanos = cycle.applyAsLong(klcCount);
            if (nanos < MIN_KLC_NANOS || nanos > MAX_KLC_NANOS) {
                faults.add(Fault.IMPLAUSIBLE_CYCLE);
            } else {
                klc = nanos / 1e6;
            }
        }
        return new ReportReading(baseline, delta, cycles, klc, faults);
    }
}
