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
     * @param wakeable parked instances a scale-out wakes, serving again without a cold start
     */
    public record Input(double[] samples, double[] recent, int current, double perInstanceRps, double capacityAtLimit,
            ScaleBounds bounds, boolean scaleToZero, Duration grace, Optional<Instant> zeroWantedSince,
            Optional<Instant> burstOutAt, int wakeable, Instant now) {

        /** Nothing parked. */
        public Input(double[] samples, double[] recent, int current, double perInstanceRps, double capacityAtLimit,
                ScaleBounds bounds, boolean scaleToZero, Duration grace, Optional<Instant> zeroWantedSince,
                Optional<Instant> burstOutAt, Instant now) {
            this(samples, recent, current, perInstanceRps, capacityAtLimit, bounds, scaleToZero, grace, zeroWantedSince,
                    burstOutAt, 0, now);
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
                        (int) Math.min(Integer.MAX_VALUE, Math.max(0, since)), in.wakeable());
        Optional<Instant> burstOutAt = d.reason() == ScaleDecision.Reason.BURST_OUT ? Optional.of(in.now())
                : in.burstOutAt();
        if (d.desired() > 0 || in.current() == 0) {
            return new Output(d.desired(), d.reason(), Optional.empty(), burstOutAt);
        }
        Instant zeroSince = in.zeroWantedSince().orElse(in.now());
        if (in.now().isBefore(zeroSince.plus(in.grace()))) {
            return new Output(1, ScaleDecision.Reason.HOLD, Optional.of(zeroSince), burstOutAt); // the grace: keep one warm
        }
        return new Output(0, ScaleDecision.Reason.SCALE_IN, Optional.of(zeroSince), burstOutAt);
    }
}
