package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.KnativePodAutoscaler;
import io.dilu.core.scaling.LazyHorizontalScaler;
import io.dilu.core.scaling.ScalingParameters;
import java.time.Instant;
import java.util.Arrays;

/**
 * How a serving system scales one function, as the co-scaling simulator drives it: once a second it sees the
 * request rates so far and its instances, and says how many it wants, how fast each serves and what each
 * books of a GPU.
 */
public sealed interface CoScalingPolicy permits CoScalingPolicy.Dilu, CoScalingPolicy.Kpa {

    String name();

    /** Instances wanted, from the rates of seconds 0..now (inclusive) and the instances running and starting. */
    int desired(double[] rates, int now, int ready, int starting);

    /** Requests per second {@code ready} instances serve together when {@code demand} wait to be served. */
    double serviceRate(int ready, double demand);

    /** Share of a GPU each instance books while it exists (starting or ready). */
    double bookedShare();

    /**
     * Dilu (the paper's §3.4, this project's defaults): lazy horizontal scaling over a 40 s window (φ_out 20,
     * φ_in 30, core's {@link LazyHorizontalScaler}) on the per-instance rate at the SM request; vertically,
     * each instance serves up to its rate at the SM limit when demand asks, the room its neighbours leave
     * (1 = all of it, no best-effort neighbour busy) scaling what it can take beyond its request.
     */
    record Dilu(FunctionProfile profile, ScalingParameters scaling, double room) implements CoScalingPolicy {

        public Dilu(FunctionProfile profile) {
            this(profile, ScalingParameters.DEFAULTS, 1.0);
        }

        @Override
        public String name() {
            return "dilu";
        }

        @Override
        public int desired(double[] rates, int now, int ready, int starting) {
            int from = Math.max(0, now + 1 - scaling.windowSeconds());
            double[] window = Arrays.copyOfRange(rates, from, now + 1);
            return new LazyHorizontalScaler(scaling).decide(window, ready + starting, profile.rpsAtRequest()).desired();
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
    }

    /**
     * Knative's Pod Autoscaler on the rps metric with its defaults (core's {@link KnativePodAutoscaler}), the
     * per-pod target being the rate at the SM request; each instance has a static share at its request. It
     * carries the autoscaler's state from one second to the next, so use one per run.
     */
    final class Kpa implements CoScalingPolicy {

        private final FunctionProfile profile;
        private final KnativePodAutoscaler autoscaler;
        private KnativePodAutoscaler.State state = KnativePodAutoscaler.State.INITIAL;

        public Kpa(FunctionProfile profile) {
            this.profile = profile;
            this.autoscaler = new KnativePodAutoscaler(KnativePodAutoscaler.Parameters.defaults(profile.rpsAtRequest()));
        }

        @Override
        public String name() {
            return "kpa";
        }

        @Override
        public int desired(double[] rates, int now, int ready, int starting) {
            KnativePodAutoscaler.Parameters p = autoscaler.parameters();
            double stable = average(rates, now, (int) p.stableWindow().toSeconds());
            double panic = average(rates, now, (int) Math.max(1, p.panicWindow().toSeconds()));
            KnativePodAutoscaler.Decision d = autoscaler.decide(stable, panic, ready, state, Instant.ofEpochSecond(now));
            state = d.next();
            return d.desired();
        }

        @Override
        public double serviceRate(int ready, double demand) {
            return ready * profile.rpsAtRequest();
        }

        @Override
        public double bookedShare() {
            return profile.requestShare();
        }

        /** The average over the last {@code seconds} seconds, counting seconds before the trace as idle. */
        private static double average(double[] rates, int now, int seconds) {
            int from = Math.max(0, now + 1 - seconds);
            double sum = 0;
            for (int t = from; t <= now; t++) {
                sum += rates[t];
            }
            return sum / seconds;
        }
    }
}
