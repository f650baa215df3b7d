package io.dilu.simulator.coscaling;

import io.dilu.core.tokens.TokenController;

/**
 * A best-effort training worker beside each instance of the function, on the same GPU: what it gets of that
 * GPU under each policy, second by second, from the share the instance holds.
 *
 * <p>With a static share (FaST-GS+, INFless+, KPA at the SM request: MPS partitions) the worker runs at its own
 * request, whatever the instance leaves idle. Under Dilu's token manager it takes what the instance does not
 * hold, up to its limit, and never less than the token manager's guarantee (half its request on average,
 * {@link TokenController#GUARANTEE_SHARE}); the instance in turn can grow to its limit only where that
 * guarantee leaves room ({@link #room}). Exclusive gives the instance a whole GPU: no worker shares it.
 *
 * @param request the worker's SM request, share of a GPU
 * @param limit its SM limit, share of a GPU, at least the request
 */
public record TrainingNeighbour(double request, double limit) {

    public TrainingNeighbour {
        if (!(request > 0) || !(limit >= request) || limit > 1) {
            throw new IllegalArgumentException("need 0 < request <= limit <= 1, got " + request + ", " + limit);
        }
    }

    /** A worker asking {@code percent} of the SM, with the webhook's default limit: min(100, 2 × request). */
    public static TrainingNeighbour ofPercent(int percent) {
        if (percent < 1 || percent > 100) {
            throw new IllegalArgumentException("--training must be an integer percent in 1..100, got " + percent);
        }
        return new TrainingNeighbour(percent / 100.0, Math.min(100, 2 * percent) / 100.0);
    }

    /** What the token manager keeps for the worker on average, share of a GPU. */
    public double guaranteed() {
        return TokenController.GUARANTEE_SHARE * request;
    }

    /** The part of an instance's way from its request to its limit that the worker's guarantee leaves free, 0..1. */
    public double room(FunctionProfile profile) {
        double free = 1 - guaranteed() - profile.requestShare();
        double way = profile.limitShare() - profile.requestShare();
        return way == 0 ? 1 : Math.clamp(free / way, 0, 1);
    }

    /**
     * The worker's mean share of its GPU beside the instances of {@code result} (over the seconds an instance
     * exists), or NaN where the policy shares no GPU (Exclusive) or no instance ever ran.
     */
    public double meanShareBeside(CoScalingSimulation.Result result) {
        if (result.policy().equals("exclusive")) {
            return Double.NaN;
        }
        double sum = 0;
        long seconds = 0;
        for (int t = 0; t < result.instances().length; t++) {
            int n = result.instances()[t];
            if (n == 0) {
                continue;
            }
            double held = result.share()[t] / n;
            sum += n * (result.policy().equals("dilu") ? Math.clamp(1 - held, guaranteed(), limit()) : request());
            seconds += n;
        }
        return seconds == 0 ? Double.NaN : sum / seconds;
    }
}
