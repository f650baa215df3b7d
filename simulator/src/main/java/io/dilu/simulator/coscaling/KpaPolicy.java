package io.dilu.simulator.coscaling;

import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.core.scaling.RevisionScaler;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Knative's Pod Autoscaler on the rps metric with its defaults, as the autoscaler runs it in replace mode (core's
 * {@link RevisionScaler} for Knative's class: a revision annotated {@code metric: rps} and {@code target} its
 * per-instance rate, on a cluster with Knative's defaults), each instance with a static share: at its SM request
 * ({@link #kpa}), or a whole GPU ({@link #exclusive}, the per-pod target then its rate with the whole GPU). It carries
 * the autoscaler's state from one second to the next, so use one per run.
 */
public final class KpaPolicy implements CoScalingPolicy {

    private final String name;
    private final double perInstanceRps;
    private final double share;
    private final Knobs knobs;
    private final RevisionScaler scaler;

    private KpaPolicy(String name, double perInstanceRps, double share) {
        this.name = name;
        this.perInstanceRps = perInstanceRps;
        this.share = share;
        List<FieldError> problems = new ArrayList<>();
        this.knobs = Knobs.kpa(Map.of(KnativeNames.METRIC, "rps", KnativeNames.TARGET, String.format(Locale.ROOT, "%s", perInstanceRps)), 0,
                KnativeAutoscalerConfig.DEFAULTS, true, problems);
        if (!problems.isEmpty()) {
            throw new IllegalStateException("the KPA's annotations read as " + problems);
        }
        this.scaler = RevisionScaler.of(knobs.policy(), io.dilu.core.scaling.ScalingParameters.DEFAULTS, -1);
    }

    public static KpaPolicy kpa(FunctionProfile profile) {
        return new KpaPolicy("kpa", profile.rpsAtRequest(), profile.requestShare());
    }

    public static KpaPolicy exclusive(FunctionProfile profile) {
        return new KpaPolicy("exclusive", profile.rpsAtWholeGpu(), 1.0);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public RevisionScaler.Decision decide(double[] rates, int now, int ready, int starting, int parked) {
        return scaler.decide(DiluPolicy.readings(rates[now], ready, parked), knobs, Instant.ofEpochSecond(now));
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
