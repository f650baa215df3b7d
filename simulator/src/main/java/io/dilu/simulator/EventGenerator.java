package io.dilu.simulator;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded event list over the paper's instance mix ({@link PaperMix}): instances arrive as a Poisson process
 * (mean one a second) and each runs for an exponentially distributed time whose mean depends on its type —
 * inference 10 minutes, LLM inference 15 minutes, training 30 minutes. The paper states the mix, not these
 * lifetimes; they are ours, chosen so that about a thousand instances run at once, and documented with the
 * figures they produce (docs/benchmarks.md).
 */
public final class EventGenerator {

    static final double MEAN_INTERARRIVAL_S = 1.0;
    static final double INFERENCE_LIFETIME_S = 600;
    static final double LLM_LIFETIME_S = 900;
    static final double TRAINING_LIFETIME_S = 1800;

    private EventGenerator() {}

    public static List<EventCsv.Event> paperMix(int count, long seed) {
        SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
        List<EventCsv.Event> events = new ArrayList<>(2 * count);
        double t = 0;
        for (SimInstance instance : PaperMix.generate(count, seed)) {
            t += exponential(random, MEAN_INTERARRIVAL_S);
            double life = exponential(random, switch (instance.type()) {
                case INFERENCE -> INFERENCE_LIFETIME_S;
                case LLM_INFERENCE -> LLM_LIFETIME_S;
                case TRAINING -> TRAINING_LIFETIME_S;
            });
            double start = round(t);
            events.add(new EventCsv.Start(start, instance));
            events.add(new EventCsv.Stop(round(t + life), instance.id()));
        }
        // Stable: a stop at the same time as a start keeps its place after the start it belongs to.
        events.sort(Comparator.comparingDouble(EventCsv.Event::timeS));
        return events;
    }

    private static double exponential(SplittableRandom random, double mean) {
        return -mean * Math.log(1 - random.nextDouble());
    }

    /** Milliseconds, as the CSV writes them, so a written list replays exactly as generated. */
    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
