package io.dilu.simulator.coscaling;

import java.util.ArrayList;
import java.util.List;

/**
 * INFless+: INFless's scaling as its code decides, each instance at a static MPS share (the SM request). Source:
 * github.com/TankLabTJU/INFless at 8940934 (2022-10-10), under {@code sourceCode/Go/src/github.com/openfaas/faas-netes/}
 * (paths below are relative to it).
 *
 * <ul>
 *   <li><b>Capacity.</b> An instance serves between a minimum and a maximum rate ({@code gpu/controller/estimator.go}
 *       lines 98-127): at most b / t (a batch of b every t, the batch's run time) and at least b / (SLO − t) (the
 *       batch must fill before its timeout), 1 rps for a batch of one. Here b / t is the rate at the SM request and
 *       b = that rate × t.
 *   <li><b>Dispatcher, every second</b> ({@code gpu/aside/dispatcher.go}, period line 16, {@code updateFunctionsLottery}
 *       lines 96-131): it deals the second's rate (the load generator's current intensity) to the serving instances
 *       as lotteries. Above their total maximum each gets its maximum and the rest goes to a virtual instance (the
 *       overflow); from {@value #LOAD_RATE} of the way between their total minimum and maximum up, all share; at
 *       zero, none gets any; in between ({@code changePodForLowWorkload}, lines 134-356) it keeps the instances
 *       whose range holds the rate — the last choice again while it still does (lines 138-158), otherwise the most
 *       instances loaded {@value #LOAD_RATE} of the way into their range, failing that 40%, 20%, or anywhere in it
 *       (lines 206-302) — and gives the others nothing. When no such set exists, all share if the rate reaches their
 *       minimum, and otherwise the rate fills instances in turn and the rest keep the lotteries they had (lines
 *       320-346).
 *   <li><b>Monitor, every {@value #MONITOR_PERIOD_S} s</b> ({@code handlers/deploy.go} lines 472-538, period line 35):
 *       if the overflow exceeds {@value #OVERFLOW_SHARE} of the rate (line 490) it starts instances of the maximum
 *       rate until the overflow is covered ({@code gpu/controller/scheduler.go} lines 221-436); otherwise every
 *       serving instance without a lottery counts one idle round, and one that already counted
 *       {@value #INACTIVE_ROUNDS} ({@code initialInactiveNum}, deploy.go line 34) is deleted (lines 499-521). A
 *       lottery resets the count ({@code gpu/repository/repository.go} lines 537-539).
 *   <li><b>Pre-warming.</b> Deploying a function starts one pre-warmed instance ({@code CreatePreWarmPod}, deploy.go
 *       line 162) that serves nothing ({@code k8s/proxy.go} lines 114-117) until a request finds no serving
 *       instance; then the gateway's scale from zero makes it a serving one, without a cold start
 *       ({@code handlers/replicas.go} lines 63-99). Idle at a monitor round, it goes back to waiting (deploy.go
 *       lines 502-505), never deleted. There is no keep-alive histogram in the code.
 * </ul>
 *
 * <p>INFless counts an instance as soon as its pod has an address (scaler.go lines 122-166), which is near its
 * start: here from its start, while it serves only once its cold start has passed. The instances are alike (one
 * configuration), so which of them the dispatcher keeps — Go's map order in the source, random — is taken as the
 * oldest, and the newest get nothing. Left out: the choice among batch sizes, CPU threads and GPU shares
 * ({@code inferResourceConfigsWithBatch}, and the placement by {@code CRE}, scheduler.go lines 291-366); the
 * source's whole-request rounding (rates here are real numbers); that the published snapshot is set up for a
 * simulated run (it removes a deleted pod from its books but not from Kubernetes, scaler.go lines 198-228, and
 * dispatches to a fixed address, proxy.go lines 119-145) — here deleting stops the instance and requests go to the
 * serving instances, as their commented-out real paths do; and that {@code ScaleUpFuncCapacity}'s loop has no exit
 * once the overflow is covered (its only {@code break}, line 273, is for no batch size fitting) — here it stops
 * there, as evidently meant.
 *
 * <p>It keeps its own instances from one second to the next, so use one per run, driven by
 * {@link CoScalingSimulation} (which stops the instances it gives up). Its deletions fall at least
 * 4 × {@value #MONITOR_PERIOD_S} s after its last scale-out, so with a cold start of at most that no instance is
 * starting then and the simulation stops a ready one, as INFless does; it checks that the simulation's instances
 * stay its own.
 */
public final class InflessPolicy implements CoScalingPolicy.AtRequest {

    /** Seconds between the scaling monitor's rounds: {@code MonitorInterval}, handlers/deploy.go:35. */
    static final int MONITOR_PERIOD_S = 10;
    /** Idle rounds an instance is spared before it is deleted: {@code initialInactiveNum}, handlers/deploy.go:34. */
    static final int INACTIVE_ROUNDS = 3;
    /** Overflow, as a part of the rate, above which the monitor scales out: handlers/deploy.go:490. */
    static final double OVERFLOW_SHARE = 0.03;
    /** How far into their range the dispatcher loads the instances it keeps: {@code PodLoadRate}, dispatcher.go:17. */
    static final double LOAD_RATE = 0.8;

    /** One instance as INFless keeps it ({@code FuncPodConfig}, gpu/types/func_config.go lines 44-59). */
    private static final class Pod {
        final int readyAt;
        final boolean prewarmed;
        /** Type "i" (dealt requests) rather than "p" (pre-warmed, waiting). */
        boolean serving;
        double lottery;
        int idleRounds;

        Pod(int readyAt, boolean prewarmed, boolean serving) {
            this.readyAt = readyAt;
            this.prewarmed = prewarmed;
            this.serving = serving;
        }

        void deal(double rps) {
            lottery = rps;
            if (rps > 0) {
                idleRounds = 0;
            }
        }
    }

    private final FunctionProfile profile;
    private final double maxRps;
    private final double minRps;
    /** In the order they started; the pre-warmed one first. */
    private final List<Pod> pods = new ArrayList<>();
    /** The dispatcher's last choice of instances to keep ({@code FuncLastChangedPodCombine}); null for none. */
    private List<Pod> kept;
    private List<Pod> idled;
    /** The virtual instance's lottery: the rate no instance has room for. */
    private double overflow;
    /** Serving instances past their cold start, this second. */
    private int servingReady;
    private boolean deployed;

    public InflessPolicy(FunctionProfile profile) {
        this.profile = profile;
        this.maxRps = profile.rpsAtRequest();
        double t = profile.serviceSeconds();
        double batch = maxRps * t;
        // estimator.go:102-127: a batch of more than one runs within SLO / 2 and must fill before SLO − t; one
        // request at a time may take the whole SLO and needs 1 rps.
        boolean batched = batch > 1 && t <= profile.sloSeconds() / 2;
        this.minRps = batched ? Math.min(maxRps, batch / (profile.sloSeconds() - t)) : Math.min(maxRps, 1);
    }

    @Override
    public FunctionProfile profile() {
        return profile;
    }

    @Override
    public String name() {
        return "infless";
    }

    /** The least rate an instance is dealt when it is kept: b / (SLO − t), or 1 for a batch of one. */
    double minRps() {
        return minRps;
    }

    @Override
    public int desired(double[] rates, int now, int ready, int starting) {
        if (!deployed) {
            deploy(now, ready, starting);
        } else {
            check(now, ready, starting);
        }
        double rps = rates[now];
        if (rps > 0 && pods.stream().noneMatch(p -> p.serving)) {
            // replicas.go:84-95: the gateway scales from zero by making the pre-warmed instance a serving one.
            Pod prewarmed = pods.get(0);
            prewarmed.serving = true;
            prewarmed.deal(maxRps);
        }
        dispatch(rps);
        if ((now + 1) % MONITOR_PERIOD_S == 0) {
            monitor(rps, now);
        }
        servingReady = (int) pods.stream().filter(p -> p.serving && p.readyAt <= now).count();
        return pods.size();
    }

    /** Only serving instances get requests: a pre-warmed one waiting serves nothing (k8s/proxy.go:114-117). */
    @Override
    public double serviceRate(int ready, double demand) {
        return Math.min(ready, servingReady) * maxRps;
    }

    /**
     * Deploying starts the pre-warmed instance (deploy.go:162); instances a run begins with are taken as it and,
     * beyond it, as serving ones.
     */
    private void deploy(int now, int ready, int starting) {
        if (starting > 0) {
            throw new IllegalStateException("INFless+ can begin with ready instances only, got " + starting + " starting");
        }
        if (ready == 0) {
            pods.add(new Pod(now + profile.coldStartSeconds(), true, false));
        }
        for (int i = 0; i < ready; i++) {
            pods.add(new Pod(now, i == 0, i > 0));
        }
        deployed = true;
    }

    private void check(int now, int ready, int starting) {
        long mineReady = pods.stream().filter(p -> p.readyAt <= now).count();
        if (ready + starting != pods.size() || ready != mineReady) {
            throw new IllegalStateException("INFless+ has " + mineReady + " ready of " + pods.size()
                    + " instances, the run " + ready + " of " + (ready + starting)
                    + ": use one per run, driven by CoScalingSimulation, with a cold start of at most "
                    + 4 * MONITOR_PERIOD_S + " s");
        }
    }

    /** The dispatcher's second: {@code updateFunctionsLottery}, dispatcher.go:96-131. */
    private void dispatch(double rps) {
        List<Pod> serving = pods.stream().filter(p -> p.serving).toList();
        int n = serving.size();
        double max = n * maxRps;
        double min = n * minRps;
        overflow = 0;
        if (rps > max) {
            serving.forEach(p -> p.deal(maxRps));
            overflow = rps - max;
        } else if (rps >= min + LOAD_RATE * (max - min)) {
            // Each gets its maximum less its part of the room left (lines 109-112): alike, rps / n each.
            serving.forEach(p -> p.deal(rps / n));
        } else if (rps == 0) {
            serving.forEach(p -> p.deal(0));
        } else {
            lowWorkload(rps, serving);
        }
    }

    /** Fewer instances for a rate below their comfortable range: {@code changePodForLowWorkload}, dispatcher.go:134-356. */
    private void lowWorkload(double rps, List<Pod> serving) {
        int n = serving.size();
        if (kept != null) {
            // The last choice again while the instances it kept still hold the rate (lines 138-158).
            int k = n - idled.size();
            if (k > 0 && rps >= k * minRps && rps <= k * maxRps) {
                kept.forEach(p -> p.deal(rps / k));
                idled.forEach(p -> p.deal(0));
                return;
            }
        }
        // Lines 206-302 try every set of instances to take out, in the order of a bit mask; alike, the first that
        // fits takes out the fewest: so the most instances kept that the rate loads LOAD_RATE of the way into their
        // range, else half of that, else a quarter, else anywhere in it (the >> 1 and >> 2 of lines 249 and 262).
        for (double depth : new double[] {LOAD_RATE, LOAD_RATE / 2, LOAD_RATE / 4, 0}) {
            for (int k = n - 1; k >= 1; k--) {
                if (rps <= k * maxRps && rps >= k * minRps + depth * k * (maxRps - minRps)) {
                    kept = new ArrayList<>(serving.subList(0, k));
                    idled = new ArrayList<>(serving.subList(k, n));
                    int keep = k;
                    kept.forEach(p -> p.deal(rps / keep));
                    idled.forEach(p -> p.deal(0));
                    return;
                }
            }
        }
        if (rps >= n * minRps) {
            serving.forEach(p -> p.deal(rps / n)); // lines 321-331
            return;
        }
        // Lines 332-346: below every instance's minimum the rate fills instances in turn; the rest keep their lotteries.
        double left = rps;
        for (Pod p : serving) {
            p.deal(Math.min(left, maxRps));
            left -= maxRps;
            if (left <= 0) {
                break;
            }
        }
    }

    /** A round of the scaling monitor: {@code instanceScaleMonitor}, deploy.go:472-538. */
    private void monitor(double rps, int now) {
        // Line 490 divides by the rate the dispatcher last read (FuncRealRps); an overflow needs a rate above zero.
        if (rps > 0 && overflow / rps > OVERFLOW_SHARE) {
            int add = (int) Math.ceil(overflow / maxRps);
            for (int i = 0; i < add; i++) {
                pods.add(new Pod(now + profile.coldStartSeconds(), false, true));
            }
            return;
        }
        List<Pod> deleted = new ArrayList<>();
        for (Pod p : pods) {
            if (!p.serving || p.lottery > 0) {
                continue;
            }
            if (p.prewarmed) {
                p.serving = false; // lines 502-505: back to waiting, not deleted
            } else if (p.idleRounds >= INACTIVE_ROUNDS) {
                deleted.add(p);
            } else {
                p.idleRounds++;
            }
        }
        if (!deleted.isEmpty()) {
            pods.removeAll(deleted);
            kept = null; // line 523
            idled = null;
        }
    }
}
