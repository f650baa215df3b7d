package io.dilu.e2e.cluster;

import io.dilu.core.contract.DiluNames;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.readiness.Readiness;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.DoubleSupplier;

/**
 * What a run saw of its functions' pods, from an informer, on the run's clock: when each was created, Ready and gone,
 * and its parking — parked (the autoscaler's {@link DiluNames#PARKED}, or a wake not yet answered), each wake from the
 * autoscaler's write seen to the pod Ready again, and each wake its GPU refused ({@link DiluNames#WAKE_FAILED}). Shared
 * by the co-scaling cluster bench and the demo, which report the same books.
 */
public final class PodLives implements ResourceEventHandler<Pod> {

    /** One pod's life. */
    public static final class Life {
        public final String function;
        public final double created;
        /** Started before the run's traffic: the function's initial instance, not a cold start of the run. */
        public volatile boolean initial;
        public volatile double ready = Double.NaN;
        public volatile double gone = Double.NaN;
        /** Parked, or asked to wake and not yet answered: its SMs are not booked, its memory is. */
        public volatile boolean parked;
        /** Each wake answered. */
        public final List<Wake> wakes = new CopyOnWriteArrayList<>();
        public volatile int failedWakes;
        volatile double wakeAsked = Double.NaN;
        /** The refusal of the current park's wake already counted. */
        volatile boolean refusalCounted;

        Life(String function, double created) {
            this.function = function;
            this.created = created;
        }

        boolean exists() {
            return Double.isNaN(gone);
        }
    }

    /** A wake seen at {@code at} (the autoscaler's write), answered {@code seconds} later by the pod Ready, unparked. */
    public record Wake(double at, double seconds) {}

    /** A function's pods now: those that exist, the ready ones that serve, and the parked ones. */
    public record Counts(int instances, int serving, int parked) {}

    /** A function's run in all: pods started during it, wakes and the refused ones, their times. */
    public record Totals(int coldStarts, double coldStartMeanS, int failedWakes, int wakes, double wakeSeconds) {}

    private final String functionLabel;
    private final DoubleSupplier clock;
    private final Map<String, Life> pods = new ConcurrentHashMap<>();

    /**
     * @param functionLabel the pod label that names its function; pods without it are not followed
     * @param clock the run's seconds
     */
    public PodLives(String functionLabel, DoubleSupplier clock) {
        this.functionLabel = functionLabel;
        this.clock = clock;
    }

    @Override
    public void onAdd(Pod p) {
        seen(p);
    }

    @Override
    public void onUpdate(Pod old, Pod p) {
        seen(p);
    }

    @Override
    public void onDelete(Pod p, boolean unknown) {
        Life life = pods.get(p.getMetadata().getName());
        if (life != null && life.exists()) {
            life.gone = clock.getAsDouble();
        }
    }

    private void seen(Pod p) {
        String function = p.getMetadata().getLabels() == null ? null : p.getMetadata().getLabels().get(functionLabel);
        if (function == null) {
            return;
        }
        double now = clock.getAsDouble();
        Life life = pods.computeIfAbsent(p.getMetadata().getName(), n -> new Life(function, now));
        boolean ready = Readiness.isPodReady(p);
        if (ready && Double.isNaN(life.ready)) {
            life.ready = now;
        }
        if (p.getMetadata().getDeletionTimestamp() != null && life.exists()) {
            life.gone = now;
        }
        Map<String, String> a = p.getMetadata().getAnnotations() == null ? Map.of() : p.getMetadata().getAnnotations();
        life.parked = a.containsKey(DiluNames.PARKED) || a.containsKey(DiluNames.WAKE) || a.containsKey(DiluNames.WAKE_FAILED);
        if (a.containsKey(DiluNames.PARKED)) {
            life.refusalCounted = false;
        }
        if (a.containsKey(DiluNames.WAKE) && Double.isNaN(life.wakeAsked)) {
            life.wakeAsked = now;
        }
        if (a.containsKey(DiluNames.WAKE_FAILED) && !life.refusalCounted) {
            life.refusalCounted = true;
            life.failedWakes++;
            life.wakeAsked = Double.NaN;
        }
        if (!life.parked && ready && !Double.isNaN(life.wakeAsked)) {
            life.wakes.add(new Wake(life.wakeAsked, now - life.wakeAsked));
            life.wakeAsked = Double.NaN;
        }
    }

    /** The pods seen so far are the functions' initial instances: the run starts now. */
    public void markInitial() {
        pods.values().forEach(life -> life.initial = true);
    }

    public Counts count(String function) {
        int instances = 0;
        int serving = 0;
        int parked = 0;
        for (Life life : pods.values()) {
            if (life.function.equals(function) && life.exists()) {
                instances++;
                if (life.parked) {
                    parked++;
                } else if (!Double.isNaN(life.ready)) {
                    serving++;
                }
            }
        }
        return new Counts(instances, serving, parked);
    }

    /** The function's wakes answered so far, in the order they were asked. */
    public List<Wake> wakes(String function) {
        return pods.values().stream().filter(l -> l.function.equals(function)).flatMap(l -> l.wakes.stream())
                .sorted(java.util.Comparator.comparingDouble(Wake::at)).toList();
    }

    public Totals totals(String function) {
        int coldStarts = 0;
        double startSeconds = 0;
        int started = 0;
        int failedWakes = 0;
        int wakes = 0;
        double wakeSeconds = 0;
        for (Life life : pods.values()) {
            if (!life.function.equals(function)) {
                continue;
            }
            failedWakes += life.failedWakes;
            wakes += life.wakes.size();
            wakeSeconds += life.wakes.stream().mapToDouble(Wake::seconds).sum();
            if (!life.initial) {
                coldStarts++;
                if (!Double.isNaN(life.ready)) {
                    startSeconds += life.ready - life.created;
                    started++;
                }
            }
        }
        // A refused wake's replacement is one of the pods started: never more of them than pods started.
        return new Totals(coldStarts, started == 0 ? Double.NaN : startSeconds / started, Math.min(failedWakes, coldStarts),
                wakes, wakeSeconds);
    }
}
