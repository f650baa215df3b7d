package io.dilu.autoscaler.decide;

import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.FunctionHistory;
import io.dilu.core.scaling.KnativeMetricWindow;
import io.dilu.core.scaling.KnativePodAutoscaler;
import io.dilu.core.scaling.RateWindow;
import io.dilu.core.scaling.ScaleDownDelay;
import io.dilu.core.scaling.ScalingParameters;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * What the autoscaler remembers of one revision between ticks, and the decision it makes each tick from the
 * tick's {@link Readings}, the revision's {@link Knobs} and the time: core's lazy scaler for Dilu's class,
 * core's {@link KnativePodAutoscaler} for Knative's. The decisions are core's pure functions; this keeps the
 * windows and timers they are fed, and adds what both classes share: the initial scale of a new revision and
 * the scale-down delay.
 */
public sealed interface RevisionScaler permits RevisionScaler.Lazy, RevisionScaler.Kpa {

    /** The scale to ask for and why, in words for logs. */
    record Decision(int desired, String reason) {}

    Decision decide(Readings readings, Knobs knobs, Instant now);

    /** The scale asked for at the last tick; -1 before the first. */
    int desired();

    /** Whether this state can go on deciding for {@code policy} (same class, same window). */
    boolean fits(Knobs.Policy policy);

    /**
     * A new revision's state, or one whose class or window changed (its scale asked so far carried over).
     *
     * @param coldStart how long an instance takes to serve once asked for: how early the history pre-warms
     */
    static RevisionScaler of(Knobs.Policy policy, ScalingParameters lazyDefaults, int carriedDesired, Duration coldStart) {
        return switch (policy) {
            case Knobs.Lazy l -> new Lazy(lazyDefaults.withWindow(l.windowSeconds()), carriedDesired, coldStart);
            case Knobs.Kpa k -> new Kpa(k.parameters(), carriedDesired);
        };
    }

    /**
     * Dilu's class: the paper's lazy scaling over per-second request rates, with its burst guard (once the capacity
     * at the SM limit is known) and the revision's own history for keeping instances warm.
     */
    final class Lazy implements RevisionScaler {
        private final ScalingParameters params;
        private final RateWindow window;
        private final ScaleDownDelay delay = new ScaleDownDelay();
        private final Duration coldStart;
        private FunctionHistory history;
        private Optional<Instant> zeroWantedSince = Optional.empty();
        private Optional<Instant> burstOutAt = Optional.empty();
        private int desired;

        Lazy(ScalingParameters params, int desired, Duration coldStart) {
            this.params = params;
            this.window = new RateWindow(params.windowSeconds());
            this.desired = desired;
            this.coldStart = coldStart;
        }

        @Override
        public Decision decide(Readings readings, Knobs knobs, Instant now) {
            Knobs.Lazy lazy = (Knobs.Lazy) knobs.policy();
            if (history == null) {
                // Idle spells the scaler holds through anyway (its window and the grace), and gaps between bursts
                // shorter than a burst's instances stay anyway (φ_in + 1 s), are part of the activity.
                history = new FunctionHistory(Duration.ofSeconds(params.windowSeconds()).plus(knobs.grace()),
                        Duration.ofSeconds(params.phiIn() + 1L));
            }
            OptionalDouble rps = readings.rps();
            if (rps.isPresent()) {
                window.record(now, rps.getAsDouble());
            }
            double atRequest = lazy.servingRate().rps();
            double atLimit = lazy.servingRate().rpsAtLimit();
            // Unknown (NaN) leaves bursts to the lazy rule; a limit never serves less than the request.
            double capacityAtLimit = Double.isNaN(atLimit) ? Double.POSITIVE_INFINITY : Math.max(atRequest, atLimit);
            Autoscale.Output out = Autoscale.decide(params, new Autoscale.Input(window.samples(now),
                    window.recent(now, params.burstWindowSeconds()), desired, atRequest, capacityAtLimit,
                    knobs.bounds(), knobs.scaleToZero(), knobs.grace(), zeroWantedSince, burstOutAt,
                    history.idle(coldStart), history.betweenBursts(coldStart), now));
            zeroWantedSince = out.zeroWantedSince();
            burstOutAt = out.burstOutAt();
            if (rps.isPresent()) {
                history.observe(now, rps.getAsDouble(), Double.isInfinite(capacityAtLimit) ? atRequest : capacityAtLimit,
                        out.desired());
            }
            desired = delay.apply(now, out.desired(), knobs.scaleDownDelay());
            return new Decision(desired, out.reason().label());
        }

        @Override
        public int desired() {
            return desired;
        }

        @Override
        public boolean fits(Knobs.Policy policy) {
            return policy instanceof Knobs.Lazy l && l.windowSeconds() == params.windowSeconds();
        }
    }

    /** Knative's class: stable and panic averages of the metric, as Knative's KPA decides on them. */
    final class Kpa implements RevisionScaler {
        private final KnativeMetricWindow metric;
        private final ScaleDownDelay delay = new ScaleDownDelay();
        private KnativePodAutoscaler.State state = KnativePodAutoscaler.State.INITIAL;
        private boolean initialized;
        private int desired;

        Kpa(KnativePodAutoscaler.Parameters params, int desired) {
            this.metric = new KnativeMetricWindow(params.stableWindow());
            this.desired = desired;
        }

        @Override
        public Decision decide(Readings readings, Knobs knobs, Instant now) {
            Knobs.Kpa kpa = (Knobs.Kpa) knobs.policy();
            KnativePodAutoscaler.Parameters p = kpa.parameters();
            OptionalDouble value = kpa.rps() ? readings.rps() : readings.concurrency();
            // Knative averages the data it has: a revision with no pod and no request writes none.
            if (value.isPresent() && (readings.readyPods() > 0 || value.getAsDouble() > 0)) {
                metric.record(now, value.getAsDouble());
            }
            KnativePodAutoscaler.Decision d = new KnativePodAutoscaler(p).decide(metric.average(p.stableWindow(), now),
                    metric.average(p.panicWindow(), now), readings.readyPods(), state, now);
            state = d.next();
            int want = d.desired();
            // A new revision is held at its initial scale until it has reached it once, as Knative's KPA does.
            initialized |= readings.readyPods() >= knobs.bounds().initial();
            if (!initialized) {
                want = Math.max(want, knobs.bounds().initial());
            }
            desired = delay.apply(now, want, knobs.scaleDownDelay());
            return new Decision(desired, d.panicking() ? "panic" : "stable");
        }

        @Override
        public int desired() {
            return desired;
        }

        @Override
        public boolean fits(Knobs.Policy policy) {
            return policy instanceof Knobs.Kpa k && k.parameters().stableWindow().equals(metric.capacity());
        }
    }
}
