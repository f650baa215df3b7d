package io.dilu.core.tokens;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Issues each period's tokens for the instances sharing one GPU: the paper's Algorithm 2.
 *
 * <p>SLO-sensitive instances are watched through their kernel launch cycle (KLC). When an instance's
 * latest KLC is more than η_violation above the smallest it has shown (ΔT = (T − Tmin)/Tmin), the GPU
 * enters EMERGENCY: that instance gets {@code maxTokens × limit} and best-effort neighbours shrink by ΔT
 * each period. An idle SLO instance falls back to its request; one whose neighbours are idle grows by
 * η_increase; otherwise the GPU is in CONTENTION. Best-effort instances follow the GPU's state; with
 * no SLO instance at all (NONE) they run at their limit.
 *
 * <p>Departures from the paper, each because its text leaves the case open or because the emulated
 * co-location benchmark showed the literal rule hurting: a KLC longer than a period keeps counting until
 * the next one completes, as long as the instance keeps launching (otherwise most 5 ms periods would see
 * no KLC and end an emergency at once); the smallest KLC is forgotten after {@code klcMemory}; in
 * CONTENTION an SLO instance that keeps launching grows by η_increase towards its limit instead of
 * dropping to its request (at the request alone every burst waited a period for tokens), and a
 * best-effort instance that an emergency pushed below its request grows back towards it (the request is
 * its guarantee) instead of staying shrunk until the SLO instance idles; a shrinking best-effort instance
 * keeps at least {@code floor × request}; and every grant is capped at {@code maxTokens × limit}.
 *
 * <p>One controller per GPU, driven by one thread; not thread-safe.
 */
public final class TokenController {

    private final TokenParameters params;
    private final Map<String, Instance> instances = new HashMap<>();
    private ControllerState state = ControllerState.NONE;

    /** Per-instance memory between periods. */
    private final class Instance {
        final long[] window = new long[params.rateWindow()];
        int cursor;
        long windowSum;
        double lastKlc = Double.NaN;
        /** Two-bucket running minimum: the minimum of the current and the previous klcMemory interval. */
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
            } else if (Duration.between(bucketStart, now).compareTo(params.klcMemory()) >= 0) {
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

    public TokenController(TokenParameters params) {
        this.params = params;
    }

    public TokenParameters parameters() {
        return params;
    }

    /** The state decided in the latest period. */
    public ControllerState state() {
        return state;
    }

    /**
     * Decides the tokens of the coming period from the one that just ended. Instances missing from
     * {@code samples} are forgotten; new ones start at their request.
     *
     * @param now the time of this period, from the caller's clock
     */
    public TokenPlan issue(Instant now, List<InstanceSample> samples) {
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
                inst.lastKlc = Double.NaN; // nothing launched: no cycle is being stretched now
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
            if (stretch > params.etaViolation()) {
                emergencyStretch = Math.max(emergencyStretch, stretch);
                issued[i] = max(s.limit());
            } else if (inst.windowSum == 0) {
                issued[i] = max(s.request());
            } else if (totalWindow - inst.windowSum == 0) {
                issued[i] = Math.min(inst.lastIssued * params.etaIncrease(), max(s.limit()));
            } else {
                anyContention = true;
                issued[i] = Math.min(Math.max(inst.lastIssued, max(s.request())) * params.etaIncrease(), max(s.limit()));
            }
        }
        state = !anySlo ? ControllerState.NONE
                : emergencyStretch > 0 ? ControllerState.EMERGENCY
                : anyContention ? ControllerState.CONTENTION
                : ControllerState.RECOVERY;

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
                case RECOVERY -> Math.min(last * params.etaIncrease(), max(s.limit()));
                case CONTENTION -> inst.windowSum == 0 || last >= max(s.request())
                        ? Math.max(last, inst.windowSum == 0 ? max(s.request()) : 0)
                        : Math.min(last * params.etaIncrease(), max(s.request()));
            };
            issued[i] = Math.max(issued[i], max(s.request()) * params.floor());
        }

        List<TokenGrant> grants = new ArrayList<>(samples.size());
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            long granted = (long) Math.floor(Math.min(issued[i], max(s.limit())));
            memory[i].lastIssued = granted;
            grants.add(new TokenGrant(s.id(), granted));
        }
        return new TokenPlan(state, grants);
    }

    private Instance newInstance(InstanceSample s) {
        Instance inst = new Instance();
        inst.lastIssued = max(s.request());
        return inst;
    }

    private double max(double share) {
        return params.maxTokens() * share;
    }
}
