package io.dilu.core.lifecycle;

import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.InstanceLifecycle.Written;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/**
 * A revision's pods in memory, with what acts on them beside the autoscaler, each second: a ReplicaSet that keeps as
 * many pods as the Deployment's scale (removing pods not ready first, the newest first), kubelets that make a new pod
 * ready after a cold start, a scheduler extender that answers a wake (room, or a refusal) and evicts parked pods for
 * their memory, a watch that shows the pods a few seconds late, and writes that fail. The autoscaler's side is played
 * as PaReconciler plays it: plan over the pods as watched with its own writes not yet seen, then carry the intents out
 * in order. Hostile settings are the caller's, by a seeded {@link Random}: a sequence is reproduced by its seed.
 */
public final class LifecycleWorld {

    /**
     * A second realizer run beside the world's own, on a copy of its pods: the cluster's changes are mirrored to it,
     * and each intent is carried out by it too; the pod it reads back after a write must say what the world's says.
     */
    public interface Mirror {
        /** The cluster created or changed a pod (a deleting one: its deletion began). */
        void cluster(Instance pod);

        /** Carries {@code intent} out on {@code pod} as it is; returns the pod as read back, or empty once it is gone. */
        Optional<Instance> realize(Intent intent, Instance pod, Instant now);
    }

    /** How much goes wrong: each a probability per write, per wake answered, or per parked pod and second. */
    public record Trouble(double failedWrite, double refusedWake, double eviction, int maxWatchLag) {
        public static final Trouble NONE = new Trouble(0, 0, 0, 0);
    }

    public static final Instant T0 = Instant.parse("2026-12-02T00:00:00Z");
    /** As PaReconciler.WRITE_LAG: how long a write is believed over a watch that does not show it. */
    static final Duration WRITE_LAG = Duration.ofSeconds(10);

    private final Random random;
    private final Map<String, Instance> pods = new LinkedHashMap<>();
    private final Map<String, Integer> readyIn = new HashMap<>();
    /** The pods as they were at the end of each recent second, the latest last; the watch shows one of them. */
    private final Deque<List<Instance>> shown = new ArrayDeque<>();
    /** How many seconds behind the watch is: it catches up at any pace but never goes back. */
    private int watchBehind;
    /** What is acting on the pods, for the violations' messages. */
    private String acting = "";
    private final UnseenWrites written = new UnseenWrites(WRITE_LAG);
    private int created;
    private int second;
    Trouble trouble;
    /** Every plan made, for the checks. */
    final List<InstanceLifecycle.Plan> plans = new ArrayList<>();
    /** Moves an instance made that {@link InstanceLifecycle#TRANSITIONS} does not allow, and second wakes. */
    final List<String> violations = new ArrayList<>();

    private final Optional<Mirror> mirror;

    LifecycleWorld(Random random, Trouble trouble) {
        this(random, trouble, Optional.empty());
    }

    LifecycleWorld(Random random, Trouble trouble, Optional<Mirror> mirror) {
        this.random = random;
        this.trouble = trouble;
        this.mirror = mirror;
    }

    Instant now() {
        return T0.plusSeconds(second);
    }

    /** The pods as they are. */
    InstanceLifecycle truth() {
        return new InstanceLifecycle(List.copyOf(pods.values()));
    }

    /** One second: the cluster acts, then the autoscaler plans for the decision and writes the plan. */
    void step(int desired, int parked, boolean lastKept) {
        second++;
        cluster(desired + parked);
        shown.addLast(List.copyOf(pods.values()));
        while (shown.size() > trouble.maxWatchLag() + 1) {
            shown.removeFirst();
        }
        watchBehind = Math.min(Math.min(watchBehind + 1, shown.size() - 1), random.nextInt(trouble.maxWatchLag() + 1));
        List<Instance> watched = List.copyOf(shown).get(shown.size() - 1 - watchBehind);
        InstanceLifecycle.Plan plan = written.over(new InstanceLifecycle(watched), now()).plan(desired, parked, lastKept);
        plans.add(plan);
        plan.realize(this::realize);
    }

    private boolean realize(Intent intent) {
        Instance p = pods.get(intent.pod().uid());
        // Gone, or failing: the API server answers 404 or an error, and nothing changes.
        if (p == null || p.deleting() || random.nextDouble() < trouble.failedWrite()) {
            return false;
        }
        acting = intent.getClass().getSimpleName();
        switch (intent) {
            case Intent.Park park -> {
                put(p.withFacts(Optional.of(now()), false, false, p.path(), p.deleting()));
                written.wrote(p.uid(), new Written(true, now()));
            }
            case Intent.Wake wake -> {
                if (p.wakeAsked()) {
                    violations.add(second + ": " + p.name() + " woken twice");
                }
                put(p.withFacts(Optional.empty(), true, false, p.path(), p.deleting()));
                written.wrote(p.uid(), new Written(false, now()));
            }
            case Intent.Serving serving -> put(p.withFacts(p.parkedAt(), p.wakeAsked(), p.wakeFailed(), serving.path(),
                    p.deleting()));
            case Intent.Delete delete -> put(p.withFacts(p.parkedAt(), p.wakeAsked(), p.wakeFailed(), p.path(), true));
        }
        mirror.ifPresent(m -> {
            Instance expected = pods.get(p.uid());
            Optional<Instance> actual = m.realize(intent, p, now());
            if (!actual.map(LifecycleWorld::facts).orElse("gone").equals(expected.deleting() ? "gone" : facts(expected))) {
                violations.add(second + ": " + intent.getClass().getSimpleName() + " on " + p.name() + " realized as "
                        + actual.map(LifecycleWorld::facts).orElse("gone") + ", not " + facts(expected));
            }
        });
        return true;
    }

    /** What a realizer writes of a pod's lifecycle. */
    static String facts(Instance p) {
        return "parkedAt=" + p.parkedAt().map(Instant::toString).orElse("-") + " wake=" + p.wakeAsked() + " refused="
                + p.wakeFailed() + " path=" + p.path() + (p.deleting() ? " deleting" : "");
    }

    /** The kubelets, the extender and the ReplicaSet, for a Deployment scaled to {@code scale}. */
    private void cluster(int scale) {
        acting = "cluster";
        pods.values().removeIf(Instance::deleting); // terminated since the last second
        for (Instance p : List.copyOf(pods.values())) {
            if (!p.ready() && p.parkedAt().isEmpty() && !p.wakeAsked() && !p.wakeFailed()) {
                int left = readyIn.merge(p.uid(), -1, Integer::sum);
                if (left <= 0) {
                    changed(new Instance(p.name(), p.uid(), p.created(), true, p.address(), p.parkedAt(), false, false,
                            p.gated(), Path.IN, false));
                }
            } else if (p.wakeAsked()) {
                boolean refused = random.nextDouble() < trouble.refusedWake();
                changed(p.withFacts(Optional.empty(), false, refused, refused ? p.path() : Path.IN, false));
            } else if (p.parkedAt().isPresent() && random.nextDouble() < trouble.eviction()) {
                changed(p.withFacts(p.parkedAt(), false, false, p.path(), true));
            }
        }
        List<Instance> live = pods.values().stream().filter(p -> !p.deleting()).toList();
        for (int i = live.size(); i < scale; i++) {
            String name = "pod-" + created++;
            changed(new Instance(name, "uid-" + name, now(), false, null, Optional.empty(), false, false, true, Path.OUT,
                    false));
            readyIn.put("uid-" + name, 1 + random.nextInt(3));
        }
        live.stream().sorted(InstanceLifecycle.REPLICA_SET_REMOVES_FIRST)
                .limit(Math.max(0, live.size() - scale)).forEach(p -> changed(p.withFacts(p.parkedAt(), p.wakeAsked(),
                        p.wakeFailed(), p.path(), true)));
    }

    /** The cluster changed a pod: the mirror is told. */
    private void changed(Instance p) {
        put(p);
        mirror.ifPresent(m -> m.cluster(p));
    }

    private void put(Instance p) {
        Instance before = pods.put(p.uid(), p);
        if (before != null && !InstanceLifecycle.allows(before.phase(), p.phase())) {
            violations.add(second + ": " + p.name() + " " + before.phase() + " -> " + p.phase() + " by " + acting);
        }
    }
}
