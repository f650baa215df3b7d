package io.dilu.simulator.coscaling;

import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.Readings;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.core.scaling.ScalingParameters;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * Dilu as its autoscaler ships (the paper's §3.4 at this project's defaults): the autoscaler's own per-revision state
 * machine, core's {@link RevisionScaler} — the lazy rule over a 40 s window, φ_out 20, φ_in 30, on the per-instance
 * rate at the SM request, with its burst guard (out at once when the last 4 s ask more than the instances serve at
 * their limits in the room left them), inside Knative's bounds, and parking: an instance released while the
 * function's history expects it back is kept at its memory alone and woken by the next scale-out. The knobs are
 * those a revision without annotations gets on a cluster with Knative's defaults; {@link #paper} is the paper's rule
 * alone. Vertically, each instance serves up to its rate at the SM limit when demand asks, the room its neighbours
 * leave (1 = all of it, no best-effort neighbour busy) scaling what it can take beyond its request. It carries the
 * autoscaler's state from one second to the next, so use one per run.
 */
public final class DiluPolicy implements CoScalingPolicy {

    /** The autoscaler's shipped scale-to-zero switch (installed alongside Knative's autoscaler). */
    private static final boolean SHIPPED_SCALE_TO_ZERO = Boolean.parseBoolean(Autoscale.DEFAULT_SCALE_TO_ZERO);

    private final FunctionProfile profile;
    private final double room;
    private final String name;
    private final Knobs knobs;
    private final RevisionScaler scaler;

    private DiluPolicy(FunctionProfile profile, ScalingParameters scaling, double room, boolean scaleToZero,
            boolean parking, String name) {
        if (!(room >= 0 && room <= 1)) {
            throw new IllegalArgumentException("room must be in [0, 1], got " + room);
        }
        this.profile = profile;
        this.room = room;
        this.name = name;
        List<FieldError> problems = new ArrayList<>();
        this.knobs = Knobs.lazy(Map.of(), KnativeAutoscalerConfig.DEFAULTS, scaling.windowSeconds(),
                new InstanceRate(profile.rpsAtRequest(), profile.name(), capacityAtLimit()), scaleToZero, parking, problems);
        if (!problems.isEmpty()) {
            throw new IllegalStateException("a revision without annotations read as " + problems);
        }
        this.scaler = RevisionScaler.of(knobs.policy(), scaling, -1);
    }

    /**
     * Dilu's autoscaler installed to replace Knative's ({@code autoscaler.mode=replace}), where it owns a revision's
     * whole life as the paper's system does: the shipped rule, scale to zero as Knative's config-autoscaler ships it
     * (on, 30 s grace), and parking.
     */
    public DiluPolicy(FunctionProfile profile) {
        this(profile, ScalingParameters.DEFAULTS, 1.0, true, true, "dilu");
    }

    /** Installed beside Knative's autoscaler (the chart's default mode): the shipped rule, never below one instance. */
    public static DiluPolicy alongside(FunctionProfile profile) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, 1.0, SHIPPED_SCALE_TO_ZERO, true, "dilu-alongside");
    }

    /** Replace mode without parking ({@code autoscaler.parking=false}): released instances go. */
    public static DiluPolicy withoutParking(FunctionProfile profile) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, 1.0, true, false, "dilu-no-parking");
    }

    /** With {@code room} of the vertical range its neighbours leave, otherwise as {@link #DiluPolicy(FunctionProfile)}. */
    public static DiluPolicy withRoom(FunctionProfile profile, double room) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, room, true, true, "dilu");
    }

    /** The paper's rule (§3.4.2): no burst guard, no parking, never below one instance: {@code --policies dilu-paper}. */
    public static DiluPolicy paper(FunctionProfile profile, double room) {
        return new DiluPolicy(profile, ScalingParameters.PAPER, room, SHIPPED_SCALE_TO_ZERO, false, "dilu-paper");
    }

    @Override
    public String name() {
        return name;
    }

    /** What one instance serves at its limit in the room its neighbours leave: the burst guard's threshold. */
    double capacityAtLimit() {
        return profile.rpsAtRequest() + room * (profile.rpsAtLimit() - profile.rpsAtRequest());
    }

    /**
     * What the autoscaler's reconciler would read this second: the serving instances' own rate, or with none
     * serving, the activator's report of the requests it holds.
     */
    static Readings readings(double rate, int ready, int parked) {
        return ready > 0 ? Readings.ofPods(ready, parked, rate)
                : new Readings(0, parked, OptionalDouble.empty(), OptionalDouble.empty(), rate, 0);
    }

    @Override
    public RevisionScaler.Decision decide(double[] rates, int now, int ready, int starting, int parked) {
        return scaler.decide(readings(rates[now], ready, parked), knobs, Instant.ofEpochSecond(now));
    }

    @Override
    public double serviceRate(int ready, double demand) {
        return serviceRate(ready, demand, 1);
    }

    @Override
    public double serviceRate(int ready, double demand, double granted) {
        if (!(granted >= 0 && granted <= 1)) {
            throw new IllegalArgumentException("granted must be in [0, 1], got " + granted);
        }
        double atRequest = ready * profile.rpsAtRequest();
        double atLimit = atRequest + ready * granted * (capacityAtLimit() - profile.rpsAtRequest());
        // Beyond its request an instance takes SM its neighbours leave idle (the token manager's fast scale-up).
        return demand > atRequest ? atLimit : atRequest;
    }

    @Override
    public double bookedShare() {
        return profile.requestShare();
    }

    /** Its SM limit: the token manager lets it grow there when its neighbours leave the room. */
    @Override
    public double bookedLimit() {
        return profile.limitShare();
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
