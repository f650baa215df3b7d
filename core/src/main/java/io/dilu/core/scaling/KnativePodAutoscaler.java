package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Knative's Pod Autoscaler (KPA) as a baseline: the decision Knative Serving makes every evaluation, written
 * from its documentation (knative.dev, "Additional autoscaling configuration for Knative Pod Autoscaler",
 * "Configuring targets", "Configuring scale to zero"). A pure function of the observed load, the ready pods,
 * the state it carried from the last decision and the time, so a simulator and a test can drive it.
 *
 * <ul>
 *   <li>Each pod is meant to carry {@code target × utilization} of the metric (70% of the per-pod target by
 *       default, so a pod with a target of 10 gets company when the average reaches 7).</li>
 *   <li>Stable mode sizes for the average over the stable window (60 s); panic mode for the average over the
 *       panic window (10% of it, 6 s). Panic begins when the panic window asks for at least the panic
 *       threshold (200%) of what the ready pods carry; while panicking the count never goes down; it ends once
 *       a whole stable window has passed without a reason to panic.</li>
 *   <li>One evaluation may scale up to {@code maxScaleUpRate} × the ready pods (1000) and down to the ready
 *       pods / {@code maxScaleDownRate} (2), and always by at least one pod either way.</li>
 *   <li>A revision reaches zero only when the stable window saw no traffic at all, and then only after the
 *       scale-to-zero grace period (30 s) — Knative's upper bound on waiting for the activator to be in the
 *       request path, taken here as the wait itself.</li>
 * </ul>
 */
public final class KnativePodAutoscaler {

    /**
     * KPA settings, with Knative's defaults in {@link #defaults}.
     *
     * @param targetPerPod the metric one pod is meant to carry (requests per second, or concurrent requests)
     * @param targetUtilization the share of the target the autoscaler aims for, in (0, 1] (0.7)
     * @param stableWindow averaging window of stable mode, 6 s..1 h (60 s)
     * @param panicWindowPercentage the panic window as a percentage of the stable window, 1..100 (10)
     * @param panicThresholdPercentage load, as a percentage of what the ready pods carry, that starts panic
     *     mode, 110..1000 (200)
     * @param maxScaleUpRate most ratio of desired to ready pods in one evaluation, > 1 (1000)
     * @param maxScaleDownRate most ratio of ready to desired pods in one evaluation, > 1 (2)
     * @param scaleToZeroGracePeriod how long a revision with no traffic keeps its last pod (30 s)
     * @param minScale fewest pods, 0 allows scale to zero
     * @param maxScale most pods, at least minScale and 1
     */
    public record Parameters(double targetPerPod, double targetUtilization, Duration stableWindow,
            double panicWindowPercentage, double panicThresholdPercentage, double maxScaleUpRate, double maxScaleDownRate,
            Duration scaleToZeroGracePeriod, int minScale, int maxScale) {

        public Parameters {
            if (!(targetPerPod > 0) || Double.isInfinite(targetPerPod)) {
                throw new IllegalArgumentException("targetPerPod must be finite and > 0, got " + targetPerPod);
            }
            if (!(targetUtilization > 0 && targetUtilization <= 1)) {
                throw new IllegalArgumentException("targetUtilization must be in (0, 1], got " + targetUtilization);
            }
            if (stableWindow.compareTo(Duration.ofSeconds(6)) < 0 || stableWindow.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("stableWindow must be in 6s..1h, got " + stableWindow);
            }
            if (!(panicWindowPercentage >= 1 && panicWindowPercentage <= 100)) {
                throw new IllegalArgumentException("panicWindowPercentage must be in 1..100, got " + panicWindowPercentage);
            }
            if (!(panicThresholdPercentage >= 110 && panicThresholdPercentage <= 1000)) {
                throw new IllegalArgumentException(
                        "panicThresholdPercentage must be in 110..1000, got " + panicThresholdPercentage);
            }
            if (!(maxScaleUpRate > 1) || !(maxScaleDownRate > 1)) {
                throw new IllegalArgumentException("maxScaleUpRate and maxScaleDownRate must be > 1, got "
                        + maxScaleUpRate + ", " + maxScaleDownRate);
            }
            if (scaleToZeroGracePeriod.isNegative()) {
                throw new IllegalArgumentException("scaleToZeroGracePeriod must be >= 0, got " + scaleToZeroGracePeriod);
            }
            if (minScale < 0 || maxScale < Math.max(1, minScale)) {
                throw new IllegalArgumentException("need 0 <= minScale <= maxScale and maxScale >= 1, got "
                        + minScale + ", " + maxScale);
            }
        }

        /** Knative's defaults around a per-pod target. */
        public static Parameters defaults(double targetPerPod) {
            return new Parameters(targetPerPod, 0.7, Duration.ofSeconds(60), 10, 200, 1000, 2, Duration.ofSeconds(30),
                    0, Integer.MAX_VALUE);
        }

        /** The panic window: a percentage of the stable window. */
        public Duration panicWindow() {
            return Duration.ofMillis(Math.round(stableWindow.toMillis() * panicWindowPercentage / 100));
        }
    }

    /**
     * What one decision hands to the next.
     *
     * @param panicSince when panic mode last had a reason (empty: not panicking)
     * @param panicPods the most pods asked for during this panic: it never goes down while panicking
     * @param idleSince when the stable window was first seen without traffic while pods ran (empty: it has traffic)
     */
    public record State(Optional<Instant> panicSince, int panicPods, Optional<Instant> idleSince) {
        public static final State INITIAL = new State(Optional.empty(), 0, Optional.empty());
    }

    /** The desired pod count, whether the autoscaler is panicking, and the state for the next decision. */
    public record Decision(int desired, boolean panicking, State next) {}

    private final Parameters params;

    public KnativePodAutoscaler(Parameters params) {
        this.params = params;
    }

    public Parameters parameters() {
        return params;
    }

    /**
     * @param stableAverage the metric's average over the stable window, summed over pods (≥ 0)
     * @param panicAverage the metric's average over the panic window, summed over pods (≥ 0)
     * @param readyPods pods ready now
     */
    public Decision decide(double stableAverage, double panicAverage, int readyPods, State state, Instant now) {
        if (!(stableAverage >= 0) || !(panicAverage >= 0) || Double.isInfinite(stableAverage) || Double.isInfinite(panicAverage)) {
            throw new IllegalArgumentException("averages must be finite and >= 0, got " + stableAverage + ", " + panicAverage);
        }
        if (readyPods < 0) {
            throw new IllegalArgumentException("readyPods must be >= 0, got " + readyPods);
        }
        double perPod = params.targetPerPod() * params.targetUtilization();
        // With no pod ready, rates and the panic test count one, so traffic to a revision at zero activates it.
        double ready = Math.max(1, readyPods);
        // Rates above 1 never stop a step of one pod: ⌈rate·n⌉ > n and ⌊n/rate⌋ < n.
        int maxUp = (int) Math.min(Integer.MAX_VALUE, Math.ceil(params.maxScaleUpRate() * ready));
        int maxDown = (int) Math.floor(ready / params.maxScaleDownRate());
        int stable = clamp(ceil(stableAverage / perPod), maxDown, maxUp);
        int panic = clamp(ceil(panicAverage / perPod), maxDown, maxUp);

        boolean overThreshold = panicAverage / perPod / ready >= params.panicThresholdPercentage() / 100;
        Optional<Instant> panicSince = state.panicSince();
        if (overThreshold) {
            panicSince = Optional.of(now); // begin, or keep, panicking
        } else if (panicSince.isPresent() && !now.isBefore(panicSince.get().plus(params.stableWindow()))) {
            panicSince = Optional.empty(); // a whole stable window without a reason
        }
        int desired;
        int panicPods = 0;
        if (panicSince.isPresent()) {
            desired = Math.max(Math.max(panic, state.panicPods()), readyPods);
            panicPods = desired;
        } else {
            desired = stable;
        }

        Optional<Instant> idleSince = Optional.empty();
        if (desired == 0 && readyPods > 0) {
            idleSince = Optional.of(state.idleSince().orElse(now));
            if (now.isBefore(idleSince.get().plus(params.scaleToZeroGracePeriod()))) {
                desired = 1; // keep the last pod through the grace period
            }
        }
        desired = Math.clamp(desired, params.minScale(), params.maxScale());
        return new Decision(desired, panicSince.isPresent(), new State(panicSince, panicPods, idleSince));
    }

    private static int ceil(double value) {
        return (int) Math.min(Integer.MAX_VALUE, Math.ceil(value - 1e-9));
    }

    private static int clamp(int value, int low, int high) {
        return Math.max(low, Math.min(high, value));
    }
}
