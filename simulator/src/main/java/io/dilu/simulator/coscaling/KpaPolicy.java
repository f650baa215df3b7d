package io.dilu.simulator.coscaling;

import io.dilu.core.scaling.KnativeMetricWindow;
import io.dilu.core.scaling.KnativePodAutoscaler;
import java.time.Instant;

/**
 * Knative's Pod Autoscaler on the rps metric with its defaults (core's {@link KnativePodAutoscaler}), each
 * instance with a static share: at its SM request ({@link #kpa}), or a whole GPU ({@link #exclusive}, the
 * per-pod target then its rate with the whole GPU). It carries the autoscaler's state from one second to
 * the next, so use one per run.
 */
public final class KpaPolicy implements CoScalingPolicy {

    private final String name;
    private final double perInstanceRps;
    private final double share;
    private final KnativePodAutoscaler autoscaler;
    private KnativePodAutoscaler.State state = KnativePodAutoscaler.State.INITIAL;
    /** The metric as Knative's autoscaler averages it: written each second the revision has a pod or a request. */
    private final KnativeMetricWindow metric;

    private KpaPolicy(String name, double perInstanceRps, double share) {
        this.name = name;
        this.perInstanceRps = perInstanceRps;
        this.share = share;
        this.autoscaler = new KnativePodAutoscaler(KnativePodAutoscaler.Parameters.defaults(perInstanceRps));
        this.metric = new KnativeMetricWindow(autoscaler.parameters().stableWindow());
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
