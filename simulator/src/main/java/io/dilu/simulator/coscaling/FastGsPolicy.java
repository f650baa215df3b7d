package io.dilu.simulator.coscaling;

/**
 * FaST-GS+: FaST-GShare's autoscaler as its code decides, each instance at a static MPS share (the SM request).
 * Source: github.com/KontonGu/FaST-GShare-Autoscaler at f3e88c7 (2024-10-03),
 * {@code internal/controller/fastfunc_controller.go}, {@code getDesiredFastfuncSpec} (lines 196-276).
 *
 * <ul>
 *   <li>Every {@value #PERIOD_S} s (the reconcile ticker, line 93) it reads the function's rate over the last
 *       {@value #WINDOW_S} s (Prometheus {@code rate(gateway_function_invocation_total[10s])}, line 137; here the
 *       mean of those seconds' rates).
 *   <li>It compares that rate with what the function's replicas serve: Σ replicas × a replica's rate (lines
 *       279-298), the replicas read from the FaSTPods' spec (line 291), so starting ones count.
 *   <li>Above that capacity by more than {@value #BAND} of it (line 246) it adds the replicas the difference
 *       needs, ⌊Δ / T⌋ plus one for a remainder ({@code schedule}, lines 301-321, added to the existing ones at
 *       line 250); below it by more than {@value #BAND} of it (line 255) it removes ⌊−Δ / T⌋ (lines 259-271),
 *       not below zero. So a 10 s window without a request takes it to zero.
 * </ul>
 *
 * <p>Which pods go is FaST-GShare's FaSTPod controller's choice (github.com/KontonGu/FaST-GShare,
 * {@code pkg/fastpod-controller-manager/controller_util.go}: {@code getPodsToDelete} lines 387-395 sorted by
 * {@code Less}, lines 106-180): pods not ready before ready ones, the newest first, as {@link CoScalingSimulation}
 * stops instances. Nothing else starts an instance: FaST-GShare's OpenFaaS provider ignores the gateway's
 * scale-from-zero requests ({@code pkg/customized_openfaas/server/replicas.go} lines 156-168), and pre-warming is
 * not written there: the source only notes it as future work ({@code pkg/fastpod-controller-manager/controller.go}
 * line 910).
 *
 * <p>A replica's rate T is the profile's rate at the SM request: the source reads it from placeholders that
 * stand for profiled throughput (30 rps for capacity, 50 rps for a new replica, {@code profiling_retrieve.go}
 * lines 20-30, "should retrieve the store of the profiling results"); one value keeps a replica added worth what
 * it is counted at afterwards. The rate read is of arrivals: the gateway's counter counts invocations as they
 * return, but completions never exceed what the replicas serve (an overloaded function would never scale out),
 * and the rule means the requests to serve (the paper's R_j, §3.4.1). Left out: the choice among spatio-temporal
 * configurations (one configuration, the SM request); that at f3e88c7 the reconcile loop reads the rates but its call of this rule is commented out
 * (lines 182-190) — the rule is the author's latest, the one called before (ff718f9, "original logic") scaled
 * up by a 30 s trend and set the replicas to the ones the difference needs, without the existing ones.
 */
public record FastGsPolicy(FunctionProfile profile) implements CoScalingPolicy.AtRequest {

    /** Seconds between decisions: the reconcile ticker, fastfunc_controller.go:93. */
    static final int PERIOD_S = 10;
    /** Seconds of rate the decision reads: {@code [10s]} in the query of fastfunc_controller.go:137. */
    static final int WINDOW_S = 10;
    /** Part of the capacity the rate must differ by before it acts: {@code 0.2*totalRPSCap}, lines 246 and 255. */
    static final double BAND = 0.2;

    @Override
    public String name() {
        return "fastgs";
    }

    /** Between decisions the replicas stay; a decision falls at the end of every {@value #PERIOD_S} s. */
    @Override
    public int desired(double[] rates, int now, int ready, int starting) {
        int replicas = ready + starting;
        if ((now + 1) % PERIOD_S != 0) {
            return replicas;
        }
        int from = Math.max(0, now + 1 - WINDOW_S);
        double sum = 0;
        for (int t = from; t <= now; t++) {
            sum += rates[t];
        }
        return decide(sum / WINDOW_S, replicas);
    }

    /** The replicas wanted for {@code rps} over the window with {@code replicas} (starting included). */
    int decide(double rps, int replicas) {
        double perReplica = profile.rpsAtRequest();
        double capacity = replicas * perReplica;
        double delta = rps - capacity;
        if (delta > BAND * capacity) {
            int whole = (int) Math.floor(delta / perReplica);
            return replicas + whole + (delta - whole * perReplica > 0 ? 1 : 0);
        }
        if (delta < 0 && -delta > BAND * capacity) {
            return Math.max(0, replicas - (int) Math.floor(-delta / perReplica));
        }
        return replicas;
    }
}
