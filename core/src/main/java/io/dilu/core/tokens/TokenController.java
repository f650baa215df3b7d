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
 * <p>SLO-sensitive instances are watched through their kernel launch cycle (KLC). When an instance's latest
 * KLC is more than its threshold times the smallest it has shown (the ratio T/Tmin above η_violation, 1.6 by
 * default, 1.3 for LLMs, as Dilu's public RCKM applies it), the GPU enters EMERGENCY: that instance gets
 * {@code maxTokens × limit}. An idle SLO instance falls back to its request; one whose neighbours are idle,
 * or that keeps launching beside them unhurt, grows by η_increase towards its limit.
 *
 * <p>Best-effort instances run at their limit while no SLO instance shares the GPU (NONE). While an SLO
 * instance is busy they run at the share it has been seen to tolerate, which each best-effort instance
 * remembers: an emergency divides it by T/Tmin, once per launch cycle the SLO instance completes in
 * emergency (as RCKM does; dividing every 5 ms period would compound the same evidence), and each healthy
 * cycle (T/Tmin below 1.1) multiplies it by η_increase, up to the limit. It starts at
 * the request and never falls below {@code floor × request}, nor below its part (by request) of what the busy
 * SLO instances' limits leave of the GPU: they are promised their limits, and a cycle judged against a best seen
 * with more of the GPU than that may stay stretched however far the neighbours shrink. While the SLO instances
 * are idle (RECOVERY) the best-effort share grows from the tolerated one by η_increase per period, up to the
 * limit. On average the request holds: a best-effort instance that got less than half of it over the last 2 s gets it, so a
 * neighbour that reports emergencies without end (its cycles are the tenant's to write) cannot starve it.
 *
 * <p>Where this departs from the paper's text, and why (docs/architecture.md has the measurements, all on
 * the emulated GPU): the paper holds the best-effort share in CONTENTION wherever RECOVERY left it, so every
 * burst that follows an idle spell meets a neighbour grown to its limit and is hurt before an emergency can
 * shrink it again; remembering the tolerated share avoids that. SLO instances run up to their limit
 * whatever the state (the paper drops an idle or contended one to its request, which makes every burst
 * wait a period for its tokens); their request is protected by shrinking the neighbours. A KLC longer than a period keeps counting
 * as long as the instance keeps launching, and a cycle that ends in a period without launches counts too (an
 * asynchronous workload often synchronises in such a period). The smallest KLC is forgotten after
 * {@code klcMemory}, so a lasting change of workload is not judged against a stale best case. Every grant is
 * capped at {@code maxTokens × limit}.
 *
 * <p><b>Order, not only rate.</b> A GPU runs kernels in launch order, so a best-effort kernel queued when an SLO
 * instance's launch cycle begins delays all of it, at any token rate. Each grant therefore also says whether the
 * instance {@linkplain TokenGrant#yields yields}: waits at launch for the neighbours' cycles that go first, an SLO
 * instance's before a best-effort one's and, among one class, the one that began first (the hook does it;
 * docs/architecture.md has the measurements). An SLO instance's current KLC,
 * T in T/Tmin, is the median of its latest {@value #CURRENT_CYCLES} cycles: one cycle stretched by the one kernel
 * already queued when it began is not contention that shrinking the neighbours relieves.
 *
 * <p><b>Parked instances</b> ({@link InstanceSample#parked}: kept warm with their model in GPU memory, their SM
 * request given back to the placement) are promised nothing: no request, no floor, no guarantee on average, and an
 * SLO one is never judged for EMERGENCY. Each period they share, by their limits and each up to its own, what the
 * booked instances left unused over the rate window: MaxTokens less the booked instances' blocks launched, averaged
 * per period. On an idle GPU a parked instance (the last of a revision, still in the request path) answers at once;
 * beside busy neighbours it waits, and nothing it launches counts as their contention.
 *
 * <p>One controller per GPU, driven by one thread; not thread-safe.
 */
public final class TokenController {

    /**
     * A cycle within this ratio of the best is healthy: a best-effort neighbour grows only after one. RCKM's recovery
     * ratio ({@code OVERFLOW_RATE_A}) is 1.2; at 1.2 a neighbour kept growing while the SLO instance's cycles ran up to
     * a fifth long, until the next emergency cut it back, a sawtooth of emergencies. At 1.1 the colocation bench's
     * train-inf (emulated, 2026-11-28) went from inference p95 1.31-1.32× Exclusive with training at 0.67-0.69 and
     * 115-128 emergency periods, to 1.26-1.27× with training at 0.66 and 95-106 emergency periods.
     */
    static final double HEALTHY_RATIO = 1.1;

    /**
     * A best-effort instance's request is guaranteed on average: over the last {@value #GUARANTEE_PERIODS}
     * periods (2 s at 5 ms) it gets at least {@value #GUARANTEE_SHARE} of its request, whatever its SLO
     * neighbours report. Real emergencies are short; a neighbour that reports stretched cycles without end (a
     * lie, or a profile too small for its load, which horizontal scaling should fix) cannot starve it.
     */
    static final int GUARANTEE_PERIODS = 400;

    /**
     * The cycles whose median is an SLO instance's current KLC, T in T/Tmin. The paper judges the latest cycle; with
     * yielding (dilu_cycle_page) a cycle is stretched at most by the one best-effort kernel already on the GPU when
     * it began, which arrives at random and which no shrinking of the neighbour's rate takes back.
     */
    static final int CURRENT_CYCLES = 5;
    public static final double GUARANTEE_SHARE = 0.5;

    private final TokenParameters params;
    private final Map<String, Instance> instances = new HashMap<>();
    private ControllerState state = ControllerState.NONE;
    /** Periods issued so far: an instance the latest period's samples did not name is forgotten. */
    private long periods;

    /** Per-instance memory between periods. */
    private final class Instance {
        /** The latest period whose samples named it. */
        long namedIn;
        final long[] window = new long[params.rateWindow()];
        int cursor;
        long windowSum;
        double lastKlc = Double.NaN;
        final double[] recentKlc = new double[CURRENT_CYCLES];
        int recentKlcCursor;
        int recentKlcCount;
        /** The median of recentKlc, T in T/Tmin: computed when a cycle is observed, read every period. */
        double currentKlc = Double.NaN;
        private final double[] sorted = new double[CURRENT_CYCLES];
        boolean newCycle;
        /** SLO only: whether its current T/Tmin is above its threshold, as this period judged it. */
        boolean violating;
        /** Two-bucket running minimum: the minimum of the current and the previous klcMemory interval. */
        double minCurrent = Double.POSITIVE_INFINITY;
        double minPrevious = Double.POSITIVE_INFINITY;
        Instant bucketStart;
        double lastIssued;
        /** Best-effort only: the share busy SLO neighbours have tolerated, in tokens. */
        double tolerated;
        /** Best-effort only: its latest grants, for the guarantee on average. */
        final long[] recentGrants = new long[GUARANTEE_PERIODS];
        int recentCursor;
        long recentSum;

        /** Whether its grants over the guarantee window fell short of {@code GUARANTEE_SHARE} of its request. */
        boolean starved(double requestTokens) {
            return recentSum < GUARANTEE_SHARE * requestTokens * GUARANTEE_PERIODS;
        }

        void granted(long tokens) {
            recentSum += tokens - recentGrants[recentCursor];
            recentGrants[recentCursor] = tokens;
        }

        /** Its latest blocks launched, over the guarantee window: whether yielding may still hold it. */
        final long[] recentLaunched = new long[GUARANTEE_PERIODS];
        long recentLaunchedSum;

        void record(long blocks) {
            windowSum += blocks - window[cursor];
            window[cursor] = blocks;
            cursor = (cursor + 1) % window.length;
            recentLaunchedSum += blocks - recentLaunched[recentCursor];
            recentLaunched[recentCursor] = blocks; // recentCursor moves on once a period, after the grant
        }

        /** Whether it launched less than {@code GUARANTEE_SHARE} of its request over the guarantee window. */
        boolean launchedBelowGuarantee(double requestTokens) {
            return recentLaunchedSum < GUARANTEE_SHARE * requestTokens * GUARANTEE_PERIODS;
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
            recentKlc[recentKlcCursor] = klc;
            recentKlcCursor = (recentKlcCursor + 1) % recentKlc.length;
            recentKlcCount = Math.min(recentKlcCount + 1, recentKlc.length);
            int n = recentKlcCount;
            System.arraycopy(recentKlc, 0, sorted, 0, n);
            java.util.Arrays.sort(sorted, 0, n);
            currentKlc = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
            minCurrent = Math.min(minCurrent, klc);
        }

        /**
         * T/Tmin, T the median of the latest {@value #CURRENT_CYCLES} cycles (fewer at the start), or 0 while no cycle
         * is running: one cycle stretched by a neighbour's kernel that was already on the GPU when it began is not
         * contention that shrinking the neighbour relieves; a stretch that most recent cycles show is.
         */
        double ratio() {
            double min = Math.min(minCurrent, minPrevious);
            return Double.isNaN(lastKlc) || Double.isInfinite(min) ? 0 : currentKlc / min;
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
     * The launch cycle an instance's latest one is judged against (Tmin, the smallest it showed over the last one to
     * two {@code klcMemory}), in ms; NaN while it has completed none, or when the controller does not know it. For
     * diagnostics: whether a stretched cycle was stretched against what the instance does alone. Call it from the
     * controller's thread, or after that thread stopped.
     */
    public double klcReferenceMillis(String id) {
        Instance inst = instances.get(id);
        double min = inst == null ? Double.POSITIVE_INFINITY : Math.min(inst.minCurrent, inst.minPrevious);
        return Double.isInfinite(min) ? Double.NaN : min;
    }

    /**
     * Decides the tokens of the coming period from the one that just ended. Instances missing from
     * {@code samples} are forgotten; new ones start at their request.
     *
     * @param now the time of this period, from the caller's clock
     */
    public TokenPlan issue(Instant now, List<InstanceSample> samples) {
        long period = ++periods;
        int named = 0;
        Instance[] memory = new Instance[samples.size()];
        long totalWindow = 0;
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            // Neither a stream nor a capturing lambda: the node agent runs this every 5 ms for every GPU.
            Instance inst = instances.get(s.id());
            if (inst == null) {
                inst = newInstance(s);
                instances.put(s.id(), inst);
            }
            if (inst.namedIn != period) {
                inst.namedIn = period;
                named++;
            }
            inst.record(s.blocksLaunched());
            inst.newCycle = !Double.isNaN(s.klcMillis());
            if (inst.newCycle) {
                inst.observeKlc(s.klcMillis(), now);
            } else if (s.blocksLaunched() == 0) {
                inst.lastKlc = Double.NaN; // no cycle ended and none is running: nothing is being stretched now
            }
            memory[i] = inst;
            if (!s.parked()) {
                totalWindow += inst.windowSum;
            }
        }
        if (named < instances.size()) {
            instances.values().removeIf(inst -> inst.namedIn != period);
        }

        double[] issued = new double[samples.size()];
        boolean anySlo = false;
        boolean anyContention = false;
        double emergencyRatio = 0;
        boolean shrink = false; // an SLO instance completed a cycle in emergency: neighbours shrink once for it
        boolean healthyCycle = false;
        boolean allHealthy = true;
        // What the busy SLO instances' limits leave of the GPU is dealt to the best-effort ones by their requests.
        double busySloLimits = 0;
        double bestEffortRequests = 0;
        double parkedLimits = 0;
        int busySlo = 0;
        int busyBooked = 0;
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            if (s.parked()) {
                parkedLimits += s.limit();
                continue;
            }
            if (memory[i].windowSum > 0) {
                busyBooked++;
            }
            if (!s.sloSensitive()) {
                bestEffortRequests += s.request();
                continue;
            }
            anySlo = true;
            Instance inst = memory[i];
            if (inst.windowSum > 0) {
                busySloLimits += max(s.limit());
                busySlo++;
            }
            double ratio = inst.ratio();
            double threshold = Double.isNaN(s.klcThreshold()) ? params.etaViolation() : s.klcThreshold();
            healthyCycle |= inst.newCycle && ratio < HEALTHY_RATIO;
            allHealthy &= ratio < HEALTHY_RATIO;
            issued[i] = max(s.limit());
            inst.violating = ratio > threshold;
            if (inst.violating) {
                emergencyRatio = Math.max(emergencyRatio, ratio);
                shrink |= inst.newCycle;
            } else if (inst.windowSum > 0 && totalWindow > inst.windowSum) {
                anyContention = true;
            }
        }
        double room = Math.max(0, params.maxTokens() - busySloLimits);
        state = !anySlo ? ControllerState.NONE
                : emergencyRatio > 0 ? ControllerState.EMERGENCY
                : anyContention ? ControllerState.CONTENTION
                : ControllerState.RECOVERY;

        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            if (s.sloSensitive() || s.parked()) {
                continue;
            }
            Instance inst = memory[i];
            // Shrinking below the room the busy SLO instances' limits leave cannot give them more than their limits,
            // which is all they are promised: their cycles, judged against a best seen with more of the GPU than
            // that, may still be stretched, but the rest is best-effort work's.
            double floor = Math.max(max(s.request()) * params.floor(),
                    Math.min(max(s.limit()), room * s.request() / bestEffortRequests));
            switch (state) {
                case EMERGENCY -> inst.tolerated = Math.max(floor,
                        Math.min(inst.tolerated, max(s.request())) / (shrink ? emergencyRatio : 1));
                case CONTENTION -> {
                    if (healthyCycle && allHealthy) {
                        inst.tolerated = Math.min(inst.tolerated * params.etaIncrease(), max(s.limit()));
                    }
                }
                default -> { }
            }
            issued[i] = switch (state) {
                case NONE -> max(s.limit());
                case RECOVERY -> Math.min(Math.max(inst.lastIssued, inst.tolerated) * params.etaIncrease(), max(s.limit()));
                default -> Math.max(inst.tolerated, floor);
            };
            if (inst.starved(max(s.request()))) {
                issued[i] = Math.max(issued[i], max(s.request()));
            }
        }

        if (parkedLimits > 0) {
            // What the booked instances left of the GPU, per period, over the rate window: a burst of theirs
            // takes it back within the window, and a parked instance never holds tokens they launch into.
            double spare = Math.max(0, params.maxTokens() - (double) totalWindow / params.rateWindow());
            for (int i = 0; i < samples.size(); i++) {
                InstanceSample s = samples.get(i);
                if (s.parked()) {
                    issued[i] = spare * s.limit() / parkedLimits;
                }
            }
        }

        List<TokenGrant> grants = new ArrayList<>(samples.size());
        for (int i = 0; i < samples.size(); i++) {
            InstanceSample s = samples.get(i);
            long granted = (long) Math.floor(Math.min(issued[i], max(s.limit())));
            memory[i].lastIssued = granted;
            if (!s.sloSensitive() && !s.parked()) {
                memory[i].granted(granted);
            }
            memory[i].recentCursor = (memory[i].recentCursor + 1) % GUARANTEE_PERIODS;
            grants.add(new TokenGrant(s.id(), granted, yields(s, memory[i], busySlo, busyBooked)));
        }
        return new TokenPlan(state, grants);
    }

    /**
     * Whether an instance's launches wait for its neighbours' launch cycles that go first (and, beside an SLO one, for
     * its own earlier kernels): a kernel that reaches the GPU while a cycle is in flight is dispatched ahead of that
     * cycle's next kernels, at any token rate. The hook decides which go first: an SLO instance's before a best-effort
     * one's, and among one class the cycle that began first (docs/architecture.md, "Order, not only rate"). So
     * best-effort and parked work yields beside any other busy instance, and an SLO instance beside another busy SLO
     * one while it launches beyond its request over the rate window (a burst that borrows, not the share it was
     * promised) and its own cycles are within its threshold: one stretched past it (a neighbour that holds its page
     * in flight, say) launches at once until they recover.
     */
    private boolean yields(InstanceSample s, Instance inst, int busySlo, int busyBooked) {
        if (s.parked()) {
            return busyBooked > 0;
        }
        int busyOthers = busyBooked - (inst.windowSum > 0 ? 1 : 0);
        if (!s.sloSensitive()) {
            // Its neighbours' cycle pages are theirs to write: one that shows a cycle without end would hold it at every
            // launch. So it yields only while it launched at least half its request over the guarantee window, the same
            // guarantee on average its tokens have; a booked instance below that runs at its token rate alone.
            return busyOthers > 0 && !inst.launchedBelowGuarantee(max(s.request()));
        }
        return busySlo > (inst.windowSum > 0 ? 1 : 0) && inst.windowSum > max(s.request()) * params.rateWindow()
                && !inst.violating;
    }

    private Instance newInstance(InstanceSample s) {
        Instance inst = new Instance();
        inst.lastIssued = max(s.request());
        inst.tolerated = max(s.request());
        // A newcomer has a history of getting its request, not of starving.
        java.util.Arrays.fill(inst.recentGrants, (long) max(s.request()));
        inst.recentSum = (long) max(s.request()) * GUARANTEE_PERIODS;
        // And of launching it, so that it yields from the start.
        java.util.Arrays.fill(inst.recentLaunched, (long) max(s.request()));
        inst.recentLaunchedSum = (long) max(s.request()) * GUARANTEE_PERIODS;
        return inst;
    }

    private double max(double share) {
        return params.maxTokens() * share;
    }
}
