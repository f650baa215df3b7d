package io.dilu.simulator.coscaling;

import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.InstanceLifecycle.Phase;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.simulator.ClusterShape;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * One function under one policy, one second at a time: the model {@link CoScalingSimulation} runs for a function on
 * GPUs of its own and {@link CoScalingFleet} runs for each function of a shared pool. Its instances are booked in a
 * {@link Pool}, which may have no room for a new one (it then waits, as an unscheduled pod does, and is placed later)
 * or for a wake (refused, as the scheduler extender refuses it).
 *
 * <p>An instance's lifecycle is the product's: its facts are those the autoscaler reads from its pod ({@link
 * InstanceLifecycle.Instance}), and what parks, wakes, moves the serving condition or replaces an instance refused a
 * wake is core's plan ({@link InstanceLifecycle#plan}), carried out in memory ({@link ModelPods}); the Deployment's
 * scale is the decision's {@code desired + parked}, which a ReplicaSet reaches by adding instances or removing them in
 * its order ({@link InstanceLifecycle#REPLICA_SET_REMOVES_FIRST}).
 *
 * <p>Order within a second: instances that waited for room are placed if there is room now; instances whose cold start
 * or wake has elapsed become ready; the policy decides; then, until nothing changes, the plan for the decision is made
 * and carried out, the pool answers each wake at once (room where the instance's memory is, or a refusal), and the
 * ReplicaSet adds or removes instances. So every parked instance is tried within the second, where the autoscaler
 * takes a tick per refused wake (docs/coscaling.md, "One wake rule"). The second's requests are served.
 */
final class FunctionRun {

    /** Where a function's instances are booked. */
    interface Pool {

        /** GPUs of the function's own: there is always room, and a wake always fits. */
        Pool OWN_GPUS = new Pool() {
            @Override
            public boolean place(Instance instance) {
                return true;
            }

            @Override
            public boolean wake(Instance instance) {
                return true;
            }

            @Override
            public void park(Instance instance) {}

            @Override
            public void release(Instance instance) {}
        };

        /** Books a new instance's shares and memory; false when there is no room for it now (nothing is booked). */
        boolean place(Instance instance);

        /**
         * Answers a wake: books a parked instance's shares again where its memory is; false when they do not fit there
         * (then the instance stays booked at its memory, as it was).
         */
        boolean wake(Instance instance);

        /** Gives an instance's shares back, keeping its memory where it is (again, for one refused a wake). */
        void park(Instance instance);

        /** Frees all an instance books. */
        void release(Instance instance);
    }

    /**
     * One instance of the function: its lifecycle's facts, as the autoscaler reads them from its pod, and the model's
     * own: whether the pool placed it, and when it serves.
     */
    static final class Instance {
        final String id;
        final FunctionRun function;
        InstanceLifecycle.Instance facts;
        /** Booked in the pool; an instance not placed waits for room, as an unscheduled pod. */
        boolean placed;
        /** While it starts or wakes, when it serves; NaN while its wake waits for the pool's answer. */
        double readyAt;

        Instance(String id, FunctionRun function, InstanceLifecycle.Instance facts) {
            this.id = id;
            this.function = function;
            this.facts = facts;
        }
    }

    /**
     * The plan is made again while the last round changed anything; each round parks, wakes, refuses or replaces an
     * instance or moves the scale towards the decision, so it settles within a few rounds an instance. More is a bug.
     */
    private static final int ROUNDS_PER_INSTANCE = 8;

    private final String name;
    private final double[] rates;
    private final FunctionProfile profile;
    private final CoScalingPolicy policy;
    private final double wakeSeconds;
    private final Pool pool;
    private final ModelPods pods;
    private int started;
    /** The Deployment's scale: the last decision's, less the parked instances the pool evicted since. */
    private int scale;
    /** Instances deleted this second after a refused wake that the ReplicaSet has not replaced yet. */
    private int replacements;

    private int coldStarts;
    private int scaleOuts;
    private int failedWakes;
    private int wakes;
    private double wakeTime;
    private int evictions;
    private double waitingSeconds;
    private double backlog;
    private double violations;
    private double gpuSeconds;
    private double memoryMibSeconds;
    private double parkedMibSeconds;
    private double dominant;
    private final double memoryShare;
    private final int[] instances;
    private final double[] share;
    private final double[] late;

    /**
     * @param warm instances ready when the run begins (not cold starts); each is placed in {@code pool}, which must
     *     have room for them
     * @param wakeSeconds from the decision to wake a parked instance to its serving
     */
    FunctionRun(String name, double[] rates, FunctionProfile profile, CoScalingPolicy policy, int warm, double wakeSeconds,
            Pool pool) {
        if (warm < 0) {
            throw new IllegalArgumentException("warm must be >= 0, got " + warm);
        }
        if (!(wakeSeconds >= 0 && wakeSeconds <= 60)) {
            throw new IllegalArgumentException("wakeSeconds must be in 0..60, got " + wakeSeconds);
        }
        this.name = name;
        this.rates = rates;
        this.profile = profile;
        this.policy = policy;
        this.wakeSeconds = wakeSeconds;
        this.pool = pool;
        this.pods = new ModelPods(pool);
        this.memoryShare = (double) profile.memoryMiB() / ClusterShape.PAPER.gpuMemoryMib();
        this.instances = new int[rates.length];
        this.share = new double[rates.length];
        this.late = new double[rates.length];
        for (int i = 0; i < warm; i++) {
            Instance instance = newInstance(0);
            if (!pool.place(instance)) {
                throw new IllegalStateException("no room for " + name + "'s warm instance " + i);
            }
            instance.placed = true;
            instance.facts = ready(instance.facts);
            pods.add(instance);
        }
        scale = warm;
    }

    String name() {
        return name;
    }

    FunctionProfile profile() {
        return profile;
    }

    CoScalingPolicy policy() {
        return policy;
    }

    /** Parked instances the pool evicted to use their memory. */
    int evictions() {
        return evictions;
    }

    /** Σ over seconds of the instances waiting for room in the pool. */
    double waitingSeconds() {
        return waitingSeconds;
    }

    /** Σ over seconds of the GPU memory the parked instances hold, GiB·s. */
    double parkedGibSeconds() {
        return parkedMibSeconds / 1024;
    }

    /**
     * A new pod, as its ReplicaSet creates it at second {@code t}: not ready, with the serving gate and its condition
     * not set yet. Its creation time orders it among those of the same second, as the ReplicaSet tells them apart.
     */
    private Instance newInstance(int t) {
        String id = String.format(Locale.ROOT, "%s#%06d", name, started);
        Instant created = Instant.ofEpochSecond(t).plusNanos(started++);
        return new Instance(id, this, new InstanceLifecycle.Instance(id, id, created, false, null, Optional.empty(), false,
                false, true, Path.OUT, false));
    }

    /** A started pod's containers are ready: Ready, its serving condition True. */
    private static InstanceLifecycle.Instance ready(InstanceLifecycle.Instance p) {
        return new InstanceLifecycle.Instance(p.name(), p.uid(), p.created(), true, p.address(), Optional.empty(), false,
                false, p.gated(), Path.IN, false);
    }

    /**
     * The pool took a parked instance's memory for a placement: the instance is gone (its booking already freed), and
     * the scale is lowered by it, as the autoscaler's next tick lowers it (the replacement the ReplicaSet starts before
     * that tick, and removes at it, is not modelled).
     */
    void evicted(Instance instance) {
        Phase phase = instance.facts.phase();
        if (phase != Phase.PARKED_OUT && phase != Phase.PARKED_IN && phase != Phase.KEPT && phase != Phase.REFUSED
                || !pods.remove(instance)) {
            throw new IllegalStateException(instance.id + " is not parked");
        }
        evictions++;
        scale = Math.max(0, scale - 1);
    }

    /** Second {@code t}, in the order the class describes, on GPUs where nothing contends with its instances. */
    void step(int t) {
        settle(t);
        serve(t, 1);
    }

    /**
     * Second {@code t} up to its serving: instances placed, started, woken, parked and removed as the class describes.
     * A shared pool then divides each GPU among the instances on it ({@link #serve}).
     */
    void settle(int t) {
        Instant now = Instant.ofEpochSecond(t);
        placeWaiting(t);
        promote(t);
        RevisionScaler.Decision d = policy.decide(rates, t, count(Phase.SERVING), count(Phase.STARTING)
                + count(Phase.WAKING), pods.lifecycle().parkedCount());
        scale = d.instances();
        int bound = ROUNDS_PER_INSTANCE * (pods.all().size() + scale + 1);
        for (int round = 0; ; round++) {
            if (round > bound) {
                throw new IllegalStateException(name + "'s instances did not settle at second " + t);
            }
            InstanceLifecycle.Plan plan = pods.lifecycle().plan(d.desired(), d.parked(), d.lastKept());
            plan.realize(intent -> realize(intent, now));
            boolean answered = answerWakes(t);
            if (!replicaSet(t) && !plan.any() && !answered) {
                break;
            }
        }
        replacements = 0; // one the ReplicaSet did not start within the second (its scale lowered) was not started
        promote(t); // an instance without a cold start serves the second it starts in
    }

    /** Its instances that serve in second {@code t} once settled: ready, or woken within it. */
    List<Instance> serving(int t) {
        return pods.all().stream().filter(i -> i.facts.phase() == Phase.SERVING
                || i.facts.phase() == Phase.WAKING && i.readyAt < t + 1).toList();
    }

    /**
     * What the second's demand asks of its serving instances, as a multiple of what they serve at their SM request:
     * above 1 each wants all of its range up to its limit (the policy's {@link CoScalingPolicy#serviceRate}); below, a
     * part of its request. 0 with none serving.
     */
    double load(int t) {
        double servers = count(Phase.SERVING) + wakingPart(t);
        return servers == 0 ? 0 : (backlog + rates[t]) / (servers * profile.rpsAtRequest());
    }

    private boolean realize(Intent intent, Instant now) {
        boolean made = pods.realize(intent, now);
        if (made && intent instanceof Intent.Delete) {
            replacements++;
        }
        return made;
    }

    /**
     * The model's scheduler extender: each wake asked is answered at once, booked where the instance's memory is or
     * refused. The instance left in the request path serves at once (from the GPU's idle SMs) while its wake books its
     * share back; the others serve after the wake.
     */
    private boolean answerWakes(int t) {
        boolean any = false;
        for (Instance instance : List.copyOf(pods.all())) {
            InstanceLifecycle.Instance p = instance.facts;
            if (p.phase() != Phase.WAKING || !Double.isNaN(instance.readyAt)) {
                continue;
            }
            any = true;
            if (pool.wake(instance)) {
                double wake = p.path() == Path.OUT ? wakeSeconds : 0;
                instance.readyAt = t + wake;
                wakes++;
                wakeTime += wake;
            } else {
                instance.facts = p.withFacts(Optional.empty(), false, true, p.path(), false);
            }
        }
        return any;
    }

    /** The ReplicaSet brings the instances to the scale; whether it added or removed any. */
    private boolean replicaSet(int t) {
        List<Instance> live = List.copyOf(pods.all());
        if (live.size() > scale) {
            live.stream().sorted(Comparator.comparing((Instance i) -> i.facts, InstanceLifecycle.REPLICA_SET_REMOVES_FIRST))
                    .limit(live.size() - scale).forEach(this::remove);
            return true;
        }
        for (int i = live.size(); i < scale; i++) {
            create(t);
        }
        return live.size() < scale;
    }

    private void remove(Instance instance) {
        pods.remove(instance);
        if (instance.placed) {
            pool.release(instance);
        }
    }

    private void create(int t) {
        Instance instance = newInstance(t);
        coldStarts++;
        if (replacements > 0) {
            replacements--;
            failedWakes++;
        } else if (t > 0) {
            scaleOuts++;
        }
        boolean queue = pods.all().stream().anyMatch(i -> !i.placed);
        pods.add(instance);
        if (!queue) {
            place(instance, t);
        }
    }

    private boolean place(Instance instance, int t) {
        if (!pool.place(instance)) {
            return false;
        }
        instance.placed = true;
        instance.readyAt = t + profile.coldStartSeconds();
        return true;
    }

    private void placeWaiting(int t) {
        for (Instance instance : List.copyOf(pods.all())) {
            if (!instance.placed && pods.get(instance.facts.uid()).isPresent() && !place(instance, t)) {
                return;
            }
        }
    }

    private void promote(int t) {
        for (Instance instance : pods.all()) {
            InstanceLifecycle.Instance p = instance.facts;
            if (p.phase() == Phase.STARTING && instance.placed && instance.readyAt <= t) {
                instance.facts = ready(p);
            } else if (p.phase() == Phase.WAKING && instance.readyAt <= t + 1e-9) {
                instance.facts = p.withFacts(Optional.empty(), false, false, Path.IN, false);
            }
        }
    }

    private int count(Phase phase) {
        return (int) pods.all().stream().filter(i -> i.facts.phase() == phase).count();
    }

    /** Of the second {@code t}, the part the waking instances serve in it: 0.4 for a wake done at t + 0.6. */
    private double wakingPart(int t) {
        double part = 0;
        for (Instance instance : pods.all()) {
            if (instance.facts.phase() == Phase.WAKING) {
                part += Math.max(0, t + 1 - instance.readyAt);
            }
        }
        return part;
    }

    /**
     * Serves second {@code t}'s requests once settled, with {@code granted} (0..1) of the range between request and
     * limit that the GPUs let its instances take, on average.
     */
    void serve(int t, double granted) {
        int ready = count(Phase.SERVING);
        int waking = count(Phase.WAKING);
        int waiting = (int) pods.all().stream().filter(i -> !i.placed).count();
        int starting = count(Phase.STARTING) - waiting;
        int parked = pods.lifecycle().parkedCount();
        double demand = backlog + rates[t];
        // Instances woken this second serve the part of it after their wake: the rate of the ready ones and as many
        // more, a part of one between two whole counts.
        double part = wakingPart(t);
        int whole = ready + (int) part;
        double rate = policy.serviceRate(whole, demand, granted) + (part - (int) part)
                * (policy.serviceRate(whole + 1, demand, granted) - policy.serviceRate(whole, demand, granted));
        FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
        backlog = step.backlog();
        violations += step.violations();
        late[t] = step.violations();
        instances[t] = pods.all().size();
        // Booked, so holding memory: all but the instances waiting for room.
        int booked = pods.all().size() - waiting;
        int onTheirWay = starting + waking;
        double held = ready == 0 ? 0 : policy.heldShare(ready, demand);
        share[t] = onTheirWay * policy.bookedShare() + ready * held;
        gpuSeconds += share[t];
        memoryMibSeconds += (double) booked * profile.memoryMiB();
        parkedMibSeconds += (double) parked * profile.memoryMiB();
        waitingSeconds += waiting;
        dominant += onTheirWay * Math.max(policy.bookedShare(), memoryShare) + ready * Math.max(held, memoryShare)
                + parked * memoryShare;
    }

    /** The run's outcome once every second has been stepped; requests still waiting count as violations. */
    CoScalingSimulation.Result result(double requests) {
        double[] lateNow = late.clone();
        if (lateNow.length > 0) {
            lateNow[lateNow.length - 1] += backlog;
        }
        CoScalingSimulation.Books books = new CoScalingSimulation.Books(scaleOuts, failedWakes, wakes, wakeTime,
                memoryMibSeconds / 1024, dominant);
        return new CoScalingSimulation.Result(policy.name(), coldStarts, requests, violations + backlog, gpuSeconds,
                instances.clone(), share.clone(), lateNow, books);
    }
}
