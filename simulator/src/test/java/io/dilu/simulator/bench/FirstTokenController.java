package io.dilu.simulator.bench;

import io.dilu.core.tokens.InstanceSample;
import io.dilu.core.tokens.TokenParameters;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The reference {@code ./dilu bench tokens} times today's controller against in the same run: Algorithm 2 as the
 * project first wrote it (commit 87afa21's {@code TokenController}, 6.81 µs per node period on 2026-11-22), names
 * aside, reading today's samples and returning its grants as an array. Frozen here, and used nowhere else, so
 * that a slower machine and slower code can be told apart (as the placement bench keeps the search before the
 * workload affinity). It is not a baseline of behaviour: its decisions are the first version's.
 */
public final class FirstTokenController {

    private final long maxTokens;
    private final double etaViolation;
    private final double etaIncrease;
    private final int rateWindow;
    private final double floor;
    private final Duration klcMemory;
    private final Map<String, Instance> instances = new HashMap<>();

    private enum State { NONE, EMERGENCY, RECOVERY, CONTENTION }

    private final class Instance {
        final long[] window = new long[rateWindow];
        int cursor;
        long windowSum;
        double lastKlc = Double.NaN;
        double minCurrent = Double.POSITIVE_INFINITY;
        double minPrevious = Double.POSITIVE_INFINITY;
        Instant bucketStart;
        double lastIssued;

        void record(long blocks) {
            windowSum += blocks - window[cursor];
            window[cursor] = blocks;
            cursor = (cursor + 1) % window.length;
        }

        void observeKlc(double klc, Instant now) {
            if (bucketStart == null) {
                bucketStart = now;
            } else if (Duration.between(bucketStart, now).compareTo(klcMemory) >= 0) {
                minPrevious = minCurrent;
                minCurrent = Double.POSITIVE_INFINITY;
                bucketStart = now;
            }
            lastKlc = klc;
            minCurrent = Math.min(minCurrent, klc);
        }

        double stretch() {
            double min = Math.min(minCurrent, minPrevious);
            return Double.isNaN(lastKlc) || Double.isInfinite(min) ? 0 : (lastKlc - min) / min;
        }
    }

    public FirstTokenController(TokenParameters params) {
        this.maxTokens = params.maxTokens();
        this.etaViolation = params.etaViolation();
        this.etaIncrease = params.etaIncrease();
        this.rateWindow = params.rateWindow();
        this.floor = params.floor();
        this.klcMemory = params.klcMemory();
    }

    /** One period's grants, in the order of {@code samples}. */
    public long[] issue(Instant now, List<InstanceSample> samples) {
        instances.keySet().retainAll(samples.stream().map(InstanceSample::id).toList());
        Instance[] memory = new Instance[samples.size()];
        long totalWindow = 0;
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            Instance inst = instances.computeIfAbsent(s.id(), id -> newInstance(s));
            inst.record(s.blocksLaunched());
            if (!Double.isNaN(s.klcMillis())) {
                inst.observeKlc(s.klcMillis(), now);
            }
            if (s.blocksLaunched() == 0) {
                inst.lastKlc = Double.NaN;
            }
            memory[i] = inst;
            totalWindow += inst.windowSum;
        }

        double[] issued = new double[samples.size()];
        boolean anySlo = false;
        boolean anyContention = false;
        double emergencyStretch = 0;
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            if (!s.sloSensitive()) {
                continue;
            }
            anySlo = true;
            Instance inst = memory[i];
            double stretch = inst.stretch();
            if (stretch > etaViolation) {
                emergencyStretch = Math.max(emergencyStretch, stretch);
                issued[i] = max(s.limit());
            } else if (inst.windowSum == 0) {
                issued[i] = max(s.request());
            } else if (totalWindow - inst.windowSum == 0) {
                issued[i] = Math.min(inst.lastIssued * etaIncrease, max(s.limit()));
            } else {
                anyContention = true;
                issued[i] = max(s.request());
            }
        }
        State state = !anySlo ? State.NONE
                : emergencyStretch > 0 ? State.EMERGENCY
                : anyContention ? State.CONTENTION
                : State.RECOVERY;

        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            if (s.sloSensitive()) {
                continue;
            }
            Instance inst = memory[i];
            double last = inst.lastIssued;
            issued[i] = switch (state) {
                case NONE -> max(s.limit());
                case EMERGENCY -> Math.min(max(s.request()), last) / emergencyStretch;
                case RECOVERY -> Math.min(last * etaIncrease, max(s.limit()));
                case CONTENTION -> inst.windowSum == 0 ? max(s.request()) : last;
            };
            issued[i] = Math.max(issued[i], max(s.request()) * floor);
        }

        long[] grants = new long[samples.size()];
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            long granted = (long) Math.floor(Math.min(issued[i], max(s.limit())));
            memory[i].lastIssued = granted;
            grants[i] = granted;
        }
        return grants;
    }

    private Instance newInstance(InstanceSample s) {
        Instance inst = new Instance();
        inst.lastIssued = max(s.request());
        return inst;
    }

    private double max(double share) {
        return maxTokens * share;
    }
}
