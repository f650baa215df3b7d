package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.FunctionHistory;
import io.dilu.core.scaling.ScaleBounds;
import io.dilu.core.scaling.ScalingParameters;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;

/**
 * Dilu as its autoscaler ships (the paper's §3.4 at this project's defaults): the autoscaler's own decision
 * ({@link Autoscale}: core's {@link io.dilu.core.scaling.LazyHorizontalScaler} over a 40 s window, φ_out 20,
 * φ_in 30, on the per-instance rate at the SM request, with its burst guard — out at once when the last 4 s ask
 * more than the instances serve at their limits in the room left them — inside Knative's bounds, scale to zero
 * off unless asked, after a grace period when on; {@link #paper} without the guard); vertically, each instance serves up to its rate at the SM limit when demand
 * asks, the room its neighbours leave (1 = all of it, no best-effort neighbour busy) scaling what it can
 * take beyond its request. It carries the autoscaler's state from one second to the next, so use one per run.
 */
public final class DiluPolicy implements CoScalingPolicy {

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
    private Optional<Instant> burstOutAt = Optional.empty();
    /** The function's own history (keep-alive and pre-warm), where the autoscaler keeps one: replace mode. */
    private final Optional<FunctionHistory> history;
    private final String name;

    public DiluPolicy(FunctionProfile profile, ScalingParameters scaling, double room, boolean scaleToZero, Duration grace) {
        this(profile, scaling, room, scaleToZero, grace, false, scaling.burstGuard() ? "dilu-alongside" : "dilu-paper");
    }

    private DiluPolicy(FunctionProfile profile, ScalingParameters scaling, double room, boolean scaleToZero, Duration grace,
            boolean keepAlive, String name) {
        if (!(room >= 0 && room <= 1)) {
            throw new IllegalArgumentException("room must be in [0, 1], got " + room);
        }
        this.profile = profile;
        this.scaling = scaling;
        this.room = room;
        this.scaleToZero = scaleToZero;
        this.grace = grace;
        this.name = name;
        // Idle spells shorter than the scaler's own hold (its window and the grace), and gaps between bursts shorter
        // than a burst's instances stay anyway (φ_in + 1 s), are part of the activity.
        this.history = keepAlive ? Optional.of(new FunctionHistory(
                Duration.ofSeconds(scaling.windowSeconds()).plus(grace), Duration.ofSeconds(scaling.phiIn() + 1L)))
                : Optional.empty();
    }

    /**
     * Dilu's autoscaler installed to replace Knative's ({@code autoscaler.mode=replace}), where it owns a revision's
     * whole life as the paper's system does: the shipped rule, scale to zero as Knative's config-autoscaler ships it
     * (on, 30 s grace), and keep-alive and pre-warming from the function's own history.
     */
    public DiluPolicy(FunctionProfile profile) {
        this(profile, ScalingParameters.DEFAULTS, 1.0, true, SHIPPED_GRACE, true, "dilu");
    }

    /** Installed beside Knative's autoscaler (the chart's default mode): the shipped rule, never below one instance. */
    public static DiluPolicy alongside(FunctionProfile profile) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, 1.0, SHIPPED_SCALE_TO_ZERO, SHIPPED_GRACE);
    }

    /** Replace mode's scale to zero and Knative's grace, without the history's keep-alive. */
    public static DiluPolicy scalingToZero(FunctionProfile profile) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, 1.0, true, SHIPPED_GRACE, false, "dilu-no-history");
    }

    /** With {@code room} of the vertical range its neighbours leave, otherwise as {@link #DiluPolicy(FunctionProfile)}. */
    public static DiluPolicy withRoom(FunctionProfile profile, double room) {
        return new DiluPolicy(profile, ScalingParameters.DEFAULTS, room, true, SHIPPED_GRACE, true, "dilu");
    }

    /** The paper's rule (§3.4.2): no burst guard, no history, never below one instance: {@code --policies dilu-paper}. */
    public static DiluPolicy paper(FunctionProfile profile, double room) {
        return new DiluPolicy(profile, ScalingParameters.PAPER, room, SHIPPED_SCALE_TO_ZERO, SHIPPED_GRACE);
    }

    @Override
    public String name() {
        return name;
    }

    /** What one instance serves at its limit in the room its neighbours leave: the burst guard's threshold. */
    double capacityAtLimit() {
        return profile.rpsAtRequest() + room * (profile.rpsAtLimit() - profile.rpsAtRequest());
    }

    @Override
    public int desired(double[] rates, int now, int ready, int starting) {
        int from = Math.max(0, now + 1 - scaling.windowSeconds());
        double[] window = Arrays.copyOfRange(rates, from, now + 1);
        double[] recent = Arrays.copyOfRange(rates, Math.max(0, now + 1 - scaling.burstWindowSeconds()), now + 1);
        Instant at = Instant.ofEpochSecond(now);
        Duration warmup = Duration.ofSeconds(profile.coldStartSeconds());
        Autoscale.Output out = Autoscale.decide(scaling, new Autoscale.Input(window, recent, current,
                profile.rpsAtRequest(), capacityAtLimit(), ScaleBounds.DEFAULTS, scaleToZero, grace, zeroWantedSince,
                burstOutAt, history.flatMap(h -> h.idle(warmup)), history.flatMap(h -> h.betweenBursts(warmup)), at));
        burstOutAt = out.burstOutAt();
        history.ifPresent(h -> h.observe(at, rates[now], capacityAtLimit(), out.desired()));
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
