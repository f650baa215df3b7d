package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * One function's scale for this tick: core's lazy horizontal scaler (with its burst guard) within Knative's bounds, with Knative's
 * rules around it — a new revision starts at its initial scale; the last instance goes only when scale to zero
 * is enabled, min-scale is 0, and the scaler has wanted zero for the whole grace period. A pure function of its
 * inputs and {@code now}.
 */
public final class Autoscale {

    /**
     * Whether the last instance of a revision with min-scale 0 may go, as the autoscaler ships (installed
     * alongside Knative's autoscaler): no, because a revision at zero is woken by the requests Knative's activator
     * reports, which then go to Knative's autoscaler. Installed to replace it, the autoscaler receives them and
     * follows config-autoscaler's {@code enable-scale-to-zero} (on by default).
     */
    public static final String DEFAULT_SCALE_TO_ZERO = "false";

    /** How long the scaler must keep wanting zero before the last instance goes: Knative's scale-to-zero-grace-period default (ISO-8601). */
    public static final String DEFAULT_SCALE_TO_ZERO_GRACE = "PT30S";

    private Autoscale() {}

    /**
     * @param samples per-second request rates of the window
     * @param recent the rates of the burst guard's latest seconds ({@link RateWindow#recent})
     * @param current instances asked for at the last tick (-1 for a new revision)
     * @param perInstanceRps what one instance serves at its SM request (profile or annotation)
     * @param capacityAtLimit what one instance serves at its SM limit in the room its GPU leaves (at least
     *     perInstanceRps; infinite when unknown, which leaves bursts to the lazy rule)
     * @param zeroWantedSince since when the scaler has wanted zero, if it does
     * @param burstOutAt when the burst guard last scaled out, if it did
     * @param idleKeepAlive for a function idle now, its history's word on its last instance ({@link FunctionHistory#idle})
     * @param betweenBursts between bursts, its history's word on the last burst's instances
     */
    public record Input(double[] samples, double[] recent, int current, double perInstanceRps, double capacityAtLimit,
            ScaleBounds bounds, boolean scaleToZero, Duration grace, Optional<Instant> zeroWantedSince,
            Optional<Instant> burstOutAt, Optional<KeepAlive.Decision> idleKeepAlive,
            Optional<FunctionHistory.Burst> betweenBursts, Instant now) {

        /** Without a history (no keep-alive beyond Knative's grace). */
        public Input(double[] samples, double[] recent, int current, double perInstanceRps, double capacityAtLimit,
                ScaleBounds bounds, boolean scaleToZero, Duration grace, Optional<Instant> zeroWantedSince,
                Optional<Instant> burstOutAt, Instant now) {
            this(samples, recent, current, perInstanceRps, capacityAtLimit, bounds, scaleToZero, grace, zeroWantedSince,
                    burstOutAt, Optional.empty(), Optional.empty(), now);
        }
    }

    /** The scale to ask for, why, and the timers to carry to the next tick. */
    public record Output(int desired, ScaleDecision.Reason reason, Optional<Instant> zeroWantedSince,
            Optional<Instant> burstOutAt) {}

    public static Output decide(ScalingParameters params, Input in) {
        ScaleBounds b = in.bounds();
        if (in.current() < 0) {
            return new Output(b.initial() == 0 && !in.scaleToZero() ? Math.max(1, b.min()) : b.initial(),
                    ScaleDecision.Reason.BOUNDS, Optional.empty(), Optional.empty());
        }
        int floor = in.scaleToZero() ? b.min() : Math.max(1, b.min());
        long since = in.burstOutAt().map(t -> Duration.between(t, in.now()).getSeconds()).orElse(Long.MAX_VALUE);
        ScaleDecision d = new LazyHorizontalScaler(params.withScaleBounds(floor, b.max()))
                .decide(in.samples(), in.recent(), in.current(), in.perInstanceRps(), in.capacityAtLimit(),
                        (int) Math.min(Integer.MAX_VALUE, Math.max(0, since)));
        Optional<Instant> burstOutAt = d.reason() == ScaleDecision.Reason.BURST_OUT ? Optional.of(in.now())
                : in.burstOutAt();
        int desired = d.desired();
        ScaleDecision.Reason reason = d.reason();
        // A burst's instances the history expects to be needed again soon: held, or asked for ahead of it.
        Optional<FunctionHistory.Burst> burst = in.betweenBursts().filter(x -> x.decision().warm(in.now()));
        if (burst.isPresent() && burst.get().instances() > desired) {
            desired = Math.min(b.max(), burst.get().instances());
            reason = desired > in.current() ? ScaleDecision.Reason.PREWARM : ScaleDecision.Reason.KEEP_ALIVE;
        }
        if (desired > 0 || (in.current() == 0 && !warmIdle(in))) {
            return new Output(desired, reason, Optional.empty(), burstOutAt);
        }
        if (in.current() == 0) {
            return new Output(1, ScaleDecision.Reason.PREWARM, Optional.empty(), burstOutAt); // expected back soon
        }
        Instant zeroSince = in.zeroWantedSince().orElse(in.now());
        if (in.now().isBefore(zeroSince.plus(in.grace()))) {
            return new Output(1, ScaleDecision.Reason.HOLD, Optional.of(zeroSince), burstOutAt); // the grace: keep one warm
        }
        if (warmIdle(in)) {
            return new Output(1, ScaleDecision.Reason.KEEP_ALIVE, Optional.of(zeroSince), burstOutAt);
        }
        return new Output(0, ScaleDecision.Reason.SCALE_IN, Optional.of(zeroSince), burstOutAt);
    }

    /** Whether the function's idle history says its last instance should be warm now. */
    private static boolean warmIdle(Input in) {
        return in.scaleToZero() && in.idleKeepAlive().map(k -> k.warm(in.now())).orElse(false);
    }
}
