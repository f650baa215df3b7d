package io.dilu.simulator.coscaling;

import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.scaling.RevisionScaler;
import io.dilu.simulator.ClusterShape;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * One function under one policy, one second at a time: the model {@link CoScalingSimulation} runs for a function on
 * GPUs of its own and {@link CoScalingFleet} runs for each function of a shared pool. Its instances are booked in a
 * {@link Pool}, which may have no room for a new one (it then waits, as an unscheduled pod does, and is placed later)
 * or for a wake (the parked instance then goes, and a new one is started: a failed wake).
 *
 * <p>Order within a second: instances that waited for room are placed if there is room now; instances whose cold start
 * or wake has elapsed become ready; the policy decides; parked instances are woken first, by core's one wake rule
 * ({@link InstanceLifecycle#wake}: the most recently parked whose GPU has room, and when none has, the least recently
 * parked goes and a new instance starts), and new instances start for the rest; surplus ones stop (waiting ones first,
 * then starting ones, the newest first) and ready ones it parks are parked (the newest first, as a ReplicaSet removes
 * the pod ready the shortest time), the others go, parked ones beyond what the policy keeps go least recently parked
 * first; the second's requests are served.
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
         * Books a parked instance's shares again where its memory is; false when they do not fit there (then the
         * instance stays parked, as it was).
         */
        boolean wake(Instance instance);

        /** Gives a serving instance's shares back, keeping its memory where it is. */
        void park(Instance instance);

        /** Frees all an instance books. */
        void release(Instance instance);
    }

    /** One instance of the function: who it is, and, while starting or waking, when it serves. */
    static final class Instance {
        final String id;
        final FunctionRun function;
        double readyAt;
        int parkedAt;

        private Instance(String id, FunctionRun function) {
            this.id = id;
            this.function = function;
        }
    }

    private final String name;
    private final double[] rates;
    private final FunctionProfile profile;
    private final CoScalingPolicy policy;
    private final double wakeSeconds;
    private final Pool pool;

    /** Started, waiting for room in the pool (an unscheduled pod). */
    private final Deque<Instance> waiting = new ArrayDeque<>();
    private final Deque<Instance> starting = new ArrayDeque<>();
    /** In the order they serve (a wake takes part of a second). */
    private final Deque<Instance> waking = new ArrayDeque<>();
    private final Deque<Instance> ready = new ArrayDeque<>();
    /** The least recently parked first. */
    private final Deque<Instance> parked = new ArrayDeque<>();
    private int started;
    private boolean lastKept;

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
        this.memoryShare = (double) profile.memoryMiB() / ClusterShape.PAPER.gpuMemoryMib();
        this.instances = new int[rates.length];
        this.share = new double[rates.length];
        this.late = new double[rates.length];
        for (int i = 0; i < warm; i++) {
            Instance instance = newInstance();
            if (!pool.place(instance)) {
                throw new IllegalStateException("no room for " + name + "'s warm instance " + i);
            }
            ready.addLast(instance);
        }
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

    /** Instances parked now. */
    int parked() {
        return parked.size();
    }

    /**
     * Whether {@code instance} is the function's last one, parked in the request path with nothing serving, and kept
     * there because the function may not reach zero ({@code RevisionScaler.Decision#lastKept}, the last decision's).
     */
    boolean kept(Instance instance) {
        return lastKept && serving() == 0 && parked.peekLast() == instance;
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

    private Instance newInstance() {
        return new Instance(name + "#" + started++, this);
    }

    /** The pool took a parked instance's memory for a placement: the instance is gone (its booking already freed). */
    void evicted(Instance instance) {
        if (!parked.remove(instance)) {
            throw new IllegalStateException(instance.id + " is not parked");
        }
        evictions++;
    }

    /** Second {@code t}, in the order the class describes. */
    void step(int t) {
        placeWaiting(t);
        promote(t);
        RevisionScaler.Decision d = policy.decide(rates, t, ready.size(), starting.size() + waking.size() + waiting.size(),
                parked.size());
        lastKept = d.lastKept();
        int serving = serving();
        for (int i = serving; i < d.desired(); i++) {
            if (!parked.isEmpty()) {
                // With nothing serving, the last parked instance is still in the request path: it serves at once
                // (from the GPU's idle SMs) while its wake books its share back.
                wake(t, serving == 0 && i == 0 ? 0 : wakeSeconds);
            } else {
                start(t);
                scaleOuts += t > 0 ? 1 : 0;
            }
        }
        for (int i = d.desired(); i < serving; i++) {
            if (!waiting.isEmpty()) {
                waiting.removeLast();
            } else if (!starting.isEmpty()) {
                pool.release(starting.removeLast());
            } else if (!waking.isEmpty()) {
                park(t, waking.removeLast());
            } else {
                park(t, ready.removeLast());
            }
        }
        while (parked.size() > d.parked()) {
            pool.release(parked.removeFirst()); // those it no longer wants go
        }
        promote(t); // an instance without a cold start serves the second it starts in
        serve(t);
    }

    private void placeWaiting(int t) {
        while (!waiting.isEmpty() && pool.place(waiting.peekFirst())) {
            Instance instance = waiting.removeFirst();
            instance.readyAt = t + profile.coldStartSeconds();
            starting.addLast(instance);
        }
    }

    private void start(int t) {
        Instance instance = newInstance();
        coldStarts++;
        if (waiting.isEmpty() && pool.place(instance)) {
            instance.readyAt = t + profile.coldStartSeconds();
            starting.addLast(instance);
        } else {
            waiting.addLast(instance);
        }
    }

    /** Wakes a parked instance by the one wake rule ({@link InstanceLifecycle#wake}), here knowing where there is room. */
    private void wake(int t, double wake) {
        InstanceLifecycle.Wake<Instance> w = InstanceLifecycle.wake(List.copyOf(parked), pool::wake).orElseThrow();
        parked.remove(w.instance());
        if (w.woken()) {
            w.instance().readyAt = t + wake;
            waking.addLast(w.instance());
            wakes++;
            wakeTime += wake;
        } else {
            pool.release(w.instance());
            failedWakes++;
            start(t);
        }
    }

    private void park(int t, Instance instance) {
        instance.parkedAt = t;
        pool.park(instance);
        parked.addLast(instance);
    }

    private void promote(int t) {
        while (!starting.isEmpty() && starting.peekFirst().readyAt <= t) {
            ready.addLast(starting.removeFirst());
        }
        while (!waking.isEmpty() && waking.peekFirst().readyAt <= t + 1e-9) {
            ready.addLast(waking.removeFirst());
        }
    }

    /** Serving instances: ready, or on their way (waiting for room, starting, waking). */
    private int serving() {
        return ready.size() + starting.size() + waking.size() + waiting.size();
    }

    /** Of the second {@code t}, the part the waking instances serve in it: 0.4 for a wake done at t + 0.6. */
    private double wakingPart(int t) {
        double part = 0;
        for (Instance instance : waking) {
            part += Math.max(0, t + 1 - instance.readyAt);
        }
        return part;
    }

    private void serve(int t) {
        double demand = backlog + rates[t];
        // Instances woken this second serve the part of it after their wake: the rate of the ready ones and as many
        // more, a part of one between two whole counts.
        double part = wakingPart(t);
        int whole = ready.size() + (int) part;
        double rate = policy.serviceRate(whole, demand)
                + (part - (int) part) * (policy.serviceRate(whole + 1, demand) - policy.serviceRate(whole, demand));
        FluidQueue.Step step = FluidQueue.step(backlog, rates[t], rate, profile.serviceSeconds(), profile.sloSeconds());
        backlog = step.backlog();
        violations += step.violations();
        late[t] = step.violations();
        instances[t] = serving() + parked.size();
        // Booked, so holding memory: all but the instances waiting for room.
        int booked = ready.size() + starting.size() + waking.size() + parked.size();
        int onTheirWay = starting.size() + waking.size();
        double held = ready.isEmpty() ? 0 : policy.heldShare(ready.size(), demand);
        share[t] = onTheirWay * policy.bookedShare() + ready.size() * held;
        gpuSeconds += share[t];
        memoryMibSeconds += (double) booked * profile.memoryMiB();
        parkedMibSeconds += (double) parked.size() * profile.memoryMiB();
        waitingSeconds += waiting.size();
        dominant += onTheirWay * Math.max(policy.bookedShare(), memoryShare) + ready.size() * Math.max(held, memoryShare)
                + parked.size() * memoryShare;
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
