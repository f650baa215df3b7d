package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.KnativeMetricWindow;
import io.dilu.core.scaling.KnativePodAutoscaler;
import io.dilu.core.scaling.LazyHorizontalScaler;
import io.dilu.core.scaling.ScaleBounds;
import io.dilu.core.scaling.ScalingParameters;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;

/**
 * How a serving system scales one function, as the co-scaling simulator drives it: once a second it sees the
 * request rates so far and its instances, and says how many it wants, how fast each serves and what each
 * books of a GPU.
 */
public sealed interface CoScalingPolicy permits CoScalingPolicy.Dilu, CoScalingPolicy.Kpa, CoScalingPolicy.AtRequest {

    String name();

    /** Instances wanted, from the rates of seconds 0..now (inclusive) and the instances running and starting. */
    int desired(double[] rates, int now, int ready, int starting);

    /** Requests per second {@code ready} instances serve together when {@code demand} wait to be served. */
    double serviceRate(int ready, double demand);

    /** Share of a GPU each instance books while it exists (starting or ready): what placement reserves for it. */
    double bookedShare();

    /**
     * Share of a GPU each of {@code ready} instances holds in a second when {@code demand} requests wait to be
     * served: its booked share, unless the policy scales instances vertically.
     */
    default double heldShare(int ready, double demand) {
        return bookedShare();
    }

    /**
     * Dilu as its autoscaler ships (the paper's §3.4 at this project's defaults): the autoscaler's own decision
     * ({@link Autoscale}: core's {@link LazyHorizontalScaler} over a 40 s window, φ_out 20, φ_in 30, on the
     * per-instance rate at the SM request, inside Knative's bounds, scale to zero off unless asked, after a
     * grace period when on); vertically, each instance serves up to its rate at the SM limit when demand
     * asks, the room its neighbours leave (1 = all of it, no best-effort neighbour busy) scaling what it can
     * take beyond its request. It carries the autoscaler's state from one second to the next, so use one per run.
     */
    final class Dilu implements CoScalingPolicy {

        /** The autoscaler's shipped scale-to-zero switch and grace, read from the one place that states them. */
        private static final boolean SHIPPED_SCALE_TO_ZERO = Boolean.parseBoolean(Autoscale.DEFAULT_SCALE_TO_ZERO);
        private static final Duration SHIPPED_GRACE = Duration.parse(Autoscale.DEFAULT_SCALE_TO_ZERO_GRACE);

        private final FunctionProfile profile;
        private final ScalingParameters scaling;
        private final double room;
        private final boolean scaleToZero;
        private final Duration grace;
        private int current = -1;
        private Optional<Instant> zeroWantedSince = Optional.empty();

        public Dilu(FunctionProfile profile, ScalingParameters scaling, double room, boolean scaleToZero, Duration grace) {
            if (!(room >= 0 && room <= 1)) {
                throw new IllegalArgumentException("room must be in [0, 1], got " + room);
            }
            this.profile = profile;
            this.scaling = scaling;
            this.room = room;
            this.scaleToZero = scaleToZero;
            this.grace = grace;
        }

        /** At the shipped defaults: scaling parameters, scale to zero and its grace as the autoscaler ships them. */
        public Dilu(FunctionProfile profile) {
            this(profile, ScalingParameters.DEFAULTS, 1.0, SHIPPED_SCALE_TO_ZERO, SHIPPED_GRACE);
        }

        /** The shipped defaults with scale to zero on (Knative's enable-scale-to-zero) and its shipped grace. */
        public static Dilu scalingToZero(FunctionProfile profile) {
            return new Dilu(profile, ScalingParameters.DEFAULTS, 1.0, true, SHIPPED_GRACE);
        }

        /** With {@code room} of the vertical range its neighbours leave, otherwise as shipped. */
        public static Dilu withRoom(FunctionProfile profile, double room) {
            return new Dilu(profile, ScalingParameters.DEFAULTS, room, SHIPPED_SCALE_TO_ZERO, SHIPPED_GRACE);
        }

        @Override
        public String name() {
            return "dilu";
        }

        @Override
        public int desired(double[] rates, int now, int ready, int starting) {
            int from = Math.max(0, now + 1 - scaling.windowSeconds());
            double[] window = Arrays.copyOfRange(rates, from, now + 1);
            Autoscale.Output out = Autoscale.decide(scaling, new Autoscale.Input(window, current, profile.rpsAtRequest(),
                    ScaleBounds.DEFAULTS, scaleToZero, grace, zeroWantedSince, Instant.ofEpochSecond(now)));
            current = out.desired();
            zeroWantedSince = out.zeroWantedSince();
            return current;
        }

        @Override
        public double serviceRate(int ready, double demand) {
            double atRequest = ready * profile.rpsAtRequest();
            double atLimit = ready * (profile.rpsAtRequest() + room * (profile.rpsAtLimit() - profile.rpsAtRequest()));
            // Beyond its request an instance takes SM its neighbours leave idle (the token manager's fast scale-up).
            return demand > atRequest ? atLimit : atRequest;
        }

        @Override
        public double bookedShare() {
            return profile.requestShare();
        }

        /**
         * The request, plus the part of the room up to the limit that the demand beyond the request needs (rate
         * taken as linear in SM between request and limit): an instance scaled up holds more of its GPU.
         */
        @Override
        public double heldShare(int ready, double demand) {
            double atRequest = ready * profile.rpsAtRequest();
            double extraRate = ready * room * (profile.rpsAtLimit() - profile.rpsAtRequest());
            if (ready == 0 || demand <= atRequest || extraRate == 0) {
                return profile.requestShare();
            }
            double used = Math.min(1, (demand - atRequest) / extraRate);
            return profile.requestShare() + used * room * (profile.limitShare() - profile.requestShare());
        }
    }

    /**
     * Knative's Pod Autoscaler on the rps metric with its defaults (core's {@link KnativePodAutoscaler}), each
     * instance with a static share: at its SM request ({@link #kpa}), or a whole GPU ({@link #exclusive}, the
     * per-pod target then its rate with the whole GPU). It carries the autoscaler's state from one second to
     * the next, so use one per run.
     */
    final class Kpa implements CoScalingPolicy {

        private final String name;
        private final double perInstanceRps;
        private final double share;
        private final KnativePodAutoscaler autoscaler;
        private KnativePodAutoscaler.State state = KnativePodAutoscaler.State.INITIAL;
        /** The metric as Knative's autoscaler averages it: written each second the revision has a pod or a request. */
        private final KnativeMetricWindow metric;

        private Kpa(String name, double perInstanceRps, double share) {
            this.name = name;
            this.perInstanceRps = perInstanceRps;
            this.share = share;
            this.autoscaler = new KnativePodAutoscaler(KnativePodAutoscaler.Parameters.defaults(perInstanceRps));
            this.metric = new KnativeMetricWindow(autoscaler.parameters().stableWindow());
        }

        public static Kpa kpa(FunctionProfile profile) {
            return new Kpa("kpa", profile.rpsAtRequest(), profile.requestShare());
        }

        public static Kpa exclusive(FunctionProfile profile) {
            return new Kpa("exclusive", profile.rpsAtWholeGpu(), 1.0);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public int desired(double[] rates, int now, int ready, int starting) {
            KnativePodAutoscaler.Parameters p = autoscaler.parameters();
            Instant at = Instant.ofEpochSecond(now);
            if (ready + starting > 0 || rates[now] > 0) {
                metric.record(at, rates[now]);
            }
            double stable = metric.average(p.stableWindow(), at);
            double panic = metric.average(p.panicWindow(), at);
            KnativePodAutoscaler.Decision d = autoscaler.decide(stable, panic, ready, state, at);
            state = d.next();
            return d.desired();
        }

        @Override
        public double serviceRate(int ready, double demand) {
            return ready * perInstanceRps;
        }

        @Override
        public double bookedShare() {
            return share;
        }
    }

    /** A policy whose instances keep a static share at their SM request: they serve its rate and book it. */
    sealed interface AtRequest extends CoScalingPolicy permits FastGs, Infless {

        FunctionProfile profile();

        @Override
        default double serviceRate(int ready, double demand) {
            return ready * profile().rpsAtRequest();
        }

        @Override
        default double bookedShare() {
            return profile().requestShare();
        }
    }

    /**
     * FaST-GS+ as the paper describes FaST-GShare's scaling (§3.4: "launches or terminates function instances
     * reactively as workloads increase or drop"): each second, as many instances as that second's rate needs
     * at a static MPS share (the SM request).
     */
    record FastGs(FunctionProfile profile) implements AtRequest {

        @Override
        public String name() {
            return "fastgs";
        }

        @Override
        public int desired(double[] rates, int now, int ready, int starting) {
            return (int) Math.ceil(rates[now] / profile.rpsAtRequest() - 1e-9);
        }

    }

    /**
     * INFless+ as the paper describes INFless's scaling (§3.4: pre-warming and keep-alive computed from prior
     * knowledge), after the hybrid histogram policy of Shahrad et al. (ATC'20) that INFless builds on: sized
     * reactively like FaST-GS+ at a static share (the SM request), an instance no longer needed is kept alive
     * for the 99th percentile of the idle times seen so far between spells of traffic (60 s until there is
     * one), and a function at zero is pre-warmed one cold start before the 5th percentile of those idle times
     * has passed since its last request. This class carries the histogram from one second to the next, so
     * use one per run.
     */
    final class Infless implements AtRequest {

        static final int DEFAULT_KEEP_ALIVE_S = 60;
        static final int MAX_KEEP_ALIVE_S = 600;

        private final FunctionProfile profile;
        private final java.util.List<Integer> idleTimes = new java.util.ArrayList<>();
        private int lastBusy = -1;
        private int idleFrom = -1;

        public Infless(FunctionProfile profile) {
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
}
