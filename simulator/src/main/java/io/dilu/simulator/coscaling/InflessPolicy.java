package io.dilu.simulator.coscaling;

/**
 * INFless+ as the paper describes INFless's scaling (§3.4: pre-warming and keep-alive computed from prior
 * knowledge), after the hybrid histogram policy of Shahrad et al. (ATC'20) that INFless builds on: sized
 * reactively like FaST-GS+ at a static share (the SM request), an instance no longer needed is kept alive
 * for the 99th percentile of the idle times seen so far between spells of traffic (60 s until there is
 * one), and a function at zero is pre-warmed one cold start before the 5th percentile of those idle times
 * has passed since its last request. This class carries the histogram from one second to the next, so
 * use one per run.
 */
public final class InflessPolicy implements CoScalingPolicy.AtRequest {

    static final int DEFAULT_KEEP_ALIVE_S = 60;
    static final int MAX_KEEP_ALIVE_S = 600;

    private final FunctionProfile profile;
    private final java.util.List<Integer> idleTimes = new java.util.ArrayList<>();
    private int lastBusy = -1;
    private int idleFrom = -1;

    public InflessPolicy(FunctionProfile profile) {
        this.profile = profile;
    }

    @Override
    public FunctionProfile profile() {
        return profile;
    }

    @Override
    public String name() {
        return "infless";
    }

    @Override
    public int desired(double[] rates, int now, int ready, int starting) {
        if (rates[now] > 0) {
            if (idleFrom >= 0) {
                idleTimes.add(now - idleFrom);
            }
            idleFrom = -1;
            lastBusy = now;
        } else if (idleFrom < 0 && lastBusy >= 0) {
            idleFrom = now;
        }
        int keepAlive = idleTimes.isEmpty() ? DEFAULT_KEEP_ALIVE_S : Math.min(MAX_KEEP_ALIVE_S, percentile(0.99));
        int needed = 0;
        for (int t = Math.max(0, now - keepAlive); t <= now; t++) {
            needed = Math.max(needed, (int) Math.ceil(rates[t] / profile.rpsAtRequest() - 1e-9));
        }
        if (needed == 0 && lastBusy >= 0 && !idleTimes.isEmpty()) {
            int idle = now - lastBusy;
            int expected = percentile(0.05);
            if (idle >= expected - profile.coldStartSeconds() && idle < expected + keepAlive) {
                needed = 1; // pre-warm for the expected return
            }
        }
        return needed;
    }

    private int percentile(double q) {
        int[] sorted = idleTimes.stream().mapToInt(Integer::intValue).sorted().toArray();
        return sorted[Math.min(sorted.length - 1, (int) Math.floor(q * sorted.length))];
    }

}
