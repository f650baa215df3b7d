package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * What an autoscaler remembers of one revision between ticks, and the decision it makes each tick from the tick's
 * {@link Readings}, the revision's {@link Knobs} and the time: core's lazy scaler for Dilu's class, core's {@link
 * KnativePodAutoscaler} for Knative's. The autoscaler's reconciler and the co-scaling simulator both run this one
 * object (as the Flink operator's autoscaler and its model run one library), so what the model predicts is what the
 * product decides. Explicitly owned mutable state, one per revision; the decisions inside are pure functions.
 *
 * <p><b>Parking</b> (Dilu's class, {@link Knobs.Lazy#parking}). An instance the lazy rule would remove while the
 * revision's history ({@link FunctionHistory#keepReleasedUntil}) expects the function back with it is parked instead: it
 * keeps its process, CUDA context and model in GPU memory, gives its SM booking back, leaves the request path and gets
 * no guaranteed tokens, so keeping it warm costs its memory and nothing else (the paper, §3.4.2: an instance kept by
 * lazy scaling "only occupies a small portion of GPU memory"). A scale-out wakes parked instances before it asks for
 * new ones, and parked instances the history no longer expects are let go. Placement may evict one to use its memory:
 * the next reading has one parked pod fewer, and the decision goes on from what is there. The revision's last
 * instance, parked, stays in the request path; where the revision may not reach zero it is never let go.
 */
public sealed interface RevisionScaler permits RevisionScaler.Lazy, RevisionScaler.Kpa {

    /**
     * The instances to ask for: {@code desired} serving ones, each booked at its SM request, and beside them
     * {@code parked} ones, booked at their memory alone; and why, in words for logs. {@code lastKept}: no serving
     * instance, and the revision may not reach zero, so its last instance, parked in the request path, is kept
     * whatever the history says — were it let go, the revision's ReplicaSet would start another.
     */
    record Decision(int desired, int parked, String reason, boolean lastKept) {

        public Decision {
            if (desired < 0 || parked < 0) {
                throw new IllegalArgumentException("desired and parked must be >= 0, got " + desired + ", " + parked);
            }
            if (lastKept && (desired != 0 || parked == 0)) {
                throw new IllegalArgumentException("a kept last instance is a parked one with none serving, got desired "
                        + desired + ", parked " + parked);
            }
        }

        /** A decision that keeps no last instance. */
        public Decision(int desired, int parked, String reason) {
            this(desired, parked, reason, false);
        }

        /** Every instance asked for: the pods the revision's Deployment runs. */
        public int instances() {
            return desired + parked;
        }
    }

    Decision decide(Readings readings, Knobs knobs, Instant now);

    /** The serving instances asked for at the last tick; -1 before the first. */
    int desired();

    /** Whether this state can go on deciding for {@code policy} (same class, same window). */
    boolean fits(Knobs.Policy policy);

    /**
     * What this state has learned that a new leader could not read again ({@link LearnedHistory}): Dilu's class, once
     * it has decided or been given one; empty for Knative's class, whose windows refill within a minute.
     */
    Optional<LearnedHistory> learned();

    /** A new revision's state, or one whose class or window changed (its scale asked so far carried over). */
    static RevisionScaler of(Knobs.Policy policy, ScalingParameters lazyDefaults, int carriedDesired) {
        return of(policy, lazyDefaults, carriedDesired, Optional.empty());
    }

    /**
     * As {@link #of(Knobs.Policy, ScalingParameters, int)}, going on from what a scaler learned before ({@link
     * #learned()}, perhaps another leader's): Dilu's class takes it up, Knative's has nothing to take.
     */
    static RevisionScaler of(Knobs.Policy policy, ScalingParameters lazyDefaults, int carriedDesired,
            Optional<LearnedHistory> learned) {
        return switch (policy) {
            case Knobs.Lazy l -> new Lazy(lazyDefaults.withWindow(l.windowSeconds()), carriedDesired, learned);
            case Knobs.Kpa k -> new Kpa(k.parameters(), carriedDesired);
        };
    }

    /**
     * Dilu's class: the paper's lazy scaling over per-second request rates, with its burst guard (once the capacity
     * at the SM limit is known), and the revision's own history for parking instances it will want back.
     */
    final class Lazy implements RevisionScaler {
        private final ScalingParameters params;
        private final RateWindow window;
        private final ScaleDownDelay delay = new ScaleDownDelay();
        private FunctionHistory history;
        /** What was learned before this state, taken up at the first tick (which knows the gaps that count). */
        private final Optional<LearnedHistory> restored;
        private Optional<Instant> zeroWantedSince = Optional.empty();
        private Optional<Instant> burstOutAt = Optional.empty();
        private int desired;
        private int parked;
        /** Until when the parked instances stay: extended by every release, by the history's word on it. */
        private Instant parkedUntil = Instant.MIN;

        Lazy(ScalingParameters params, int desired, Optional<LearnedHistory> restored) {
            this.params = params;
            this.window = new RateWindow(params.windowSeconds());
            this.desired = desired;
            this.restored = restored;
            restored.flatMap(LearnedHistory::parkedUntil).ifPresent(until -> {
                parkedUntil = until;
                // The instances parked before stay while their keep-until holds: the first tick takes as many as it
                // finds parked (none were asked for by this state yet, and fewer found are simply fewer).
                parked = Integer.MAX_VALUE;
            });
        }

        @Override
        public Decision decide(Readings readings, Knobs knobs, Instant now) {
            Knobs.Lazy lazy = (Knobs.Lazy) knobs.policy();
            if (history == null) {
                // Idle spells the scaler holds through anyway (its window and the grace), and gaps between bursts
                // shorter than a burst's instances stay anyway (φ_in + 1 s), are part of the activity.
                history = new FunctionHistory(Duration.ofSeconds(params.windowSeconds()).plus(knobs.grace()),
                        Duration.ofSeconds(params.phiIn() + 1L),
                        restored.map(LearnedHistory::history).orElseGet(FunctionHistory.Snapshot::empty));
            }
            OptionalDouble rps = readings.rps();
            if (rps.isPresent()) {
                window.record(now, rps.getAsDouble());
            }
            double atRequest = lazy.servingRate().rps();
            double atLimit = lazy.servingRate().rpsAtLimit();
            // Unknown (NaN) leaves bursts to the lazy rule; a limit never serves less than the request.
            double capacityAtLimit = Double.isNaN(atLimit) ? Double.POSITIVE_INFINITY : Math.max(atRequest, atLimit);
            // Parked instances evicted since the last tick (placement took their memory) are gone.
            int parkedNow = Math.min(parked, readings.parkedPods());
            // Knative's grace keeps the last instance until the activator is in the request path. Parked, the last
            // instance stays there itself and answers the next request at once from the GPU's idle SMs while its wake
            // books its share back: nothing to wait for.
            Duration grace = lazy.parking() ? Duration.ZERO : knobs.grace();
            // Where a revision may not reach zero (alongside Knative's autoscaler, whose activator a revision at zero
            // would report to), its last instance never goes; parked, it still gives its SMs back and stays in the
            // request path, where its own pod's readings wake it.
            boolean lastParks = lazy.parking() && !knobs.scaleToZero() && knobs.bounds().min() == 0;
            Autoscale.Output out = Autoscale.decide(params, new Autoscale.Input(window.samples(now),
                    window.recent(now, params.burstWindowSeconds()), desired, atRequest, capacityAtLimit,
                    knobs.bounds(), knobs.scaleToZero() || lastParks, grace, zeroWantedSince, burstOutAt, parkedNow, now));
            zeroWantedSince = out.zeroWantedSince();
            burstOutAt = out.burstOutAt();
            if (rps.isPresent()) {
                history.observe(now, rps.getAsDouble(), Double.isInfinite(capacityAtLimit) ? atRequest : capacityAtLimit);
            }
            int serving = delay.apply(now, out.desired(), knobs.scaleDownDelay());
            int before = Math.max(desired, 0);
            if (lazy.parking() && serving < before) {
                Instant until = history.keepReleasedUntil(now, serving == 0);
                parkedUntil = until.isAfter(parkedUntil) ? until : parkedUntil;
            }
            parked = lazy.parking() && now.isBefore(parkedUntil)
                    ? Math.min(park(before, serving, parkedNow), knobs.bounds().max() - serving) : 0;
            boolean lastKept = lastParks && serving == 0;
            if (lastKept) {
                parked = Math.max(parked, 1); // evicted, it comes back: the revision's one instance
            }
            desired = serving;
            String reason = out.reason().label();
            return new Decision(desired, parked, parked == 0 ? reason : reason + ", " + parked + " parked", lastKept);
        }

        /**
         * The parked instances after a tick that takes the serving ones from {@code before} to {@code after}, while
         * parking lasts: a scale-out wakes parked ones first, and the instances a scale-in releases are parked. Only
         * instances that exist are parked: parking never starts one.
         */
        static int park(int before, int after, int parkedNow) {
            int woken = Math.min(parkedNow, Math.max(0, after - before));
            return parkedNow - woken + Math.max(0, before - after);
        }

        @Override
        public int desired() {
            return desired;
        }

        @Override
        public boolean fits(Knobs.Policy policy) {
            return policy instanceof Knobs.Lazy l && l.windowSeconds() == params.windowSeconds();
        }

        @Override
        public Optional<LearnedHistory> learned() {
            if (history == null) {
                return restored; // not decided yet: what it was given, unchanged
            }
            return Optional.of(new LearnedHistory(history.snapshot(),
                    parkedUntil.equals(Instant.MIN) ? Optional.empty() : Optional.of(parkedUntil)));
        }
    }

    /** Knative's class: stable and panic averages of the metric, as Knative's KPA decides on them. Nothing parks. */
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
            return new Decision(desired, 0, d.panicking() ? "panic" : "stable");
        }

        @Override
        public int desired() {
            return desired;
        }

        @Override
        public boolean fits(Knobs.Policy policy) {
            return policy instanceof Knobs.Kpa k && k.parameters().stableWindow().equals(metric.capacity());
        }

        @Override
        public Optional<LearnedHistory> learned() {
            return Optional.empty();
        }
    }
}
