package io.dilu.simulator.coscaling;

import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.InstanceBook;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.ParkedEviction;
import io.dilu.core.placement.PlacementDecision;
import io.dilu.core.placement.Slot;
import io.dilu.simulator.ClusterShape;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Many functions on one pool of GPU nodes, each scaled by its own instance of one policy, second by second, every
 * instance placed by core's {@link ComplementaryPlacement} (Algorithm 1, as the scheduler extender places) on one
 * {@link ClusterState}. What a single function on GPUs of its own cannot show: a parked instance's GPU may fill up while
 * it is parked, and parked memory competes with new placements.
 *
 * <p>The books: an instance starting or serving books its SM request and limit (a static share's limit is its request;
 * Exclusive's is the whole GPU) and its memory; a parked one (Dilu's) gives its shares back and keeps its memory where
 * it is (booked again with zero-SM slots on the same GPUs). A wake books its shares again on those GPUs when they fit by
 * Algorithm 1's feasibility ({@link ComplementaryPlacement#fits}); otherwise the parked instance is let go and a new
 * one placed where Algorithm 1 says: a cold start, counted as a failed wake ({@link FunctionRun}). A placement that
 * finds no room frees the memory of parked instances on a GPU where its shares fit ({@link ParkedEviction#victims}) and
 * is tried again; failing that it waits, as an unscheduled pod, and is tried every second. GPUs needed are the GPUs
 * with anything booked; a GPU that only parked models hold is handed back at the end of the second, its parked
 * instances let go ({@link ParkedEviction#alone}), as the scheduler extender does.
 *
 * <p>Vertically, each GPU is divided among the instances on it every second, as the token manager divides it: each
 * serving instance takes its SM request (a part of it when its demand asks less), a resident its request, and what the
 * GPU has beyond those goes to the instances that want their range up to the limit (a function whose demand passes
 * what its instances serve at their requests; a resident, always), in proportion to that range. A function serves at
 * the mean part of the range its instances got ({@link CoScalingPolicy#serviceRate(int, double, double)}). So limits
 * that sum above a GPU, as γ > 1 allows, are met only while the instances holding them do not want them at once.
 *
 * <p>Within a second the functions settle in the fleet's order, then the GPUs are divided and every function serves;
 * the GPUs are counted after the last.
 */
public final class CoScalingFleet {

    /**
     * The one tenant of the fleet's parked instances: its functions are one platform's, as in the paper's evaluation,
     * so that the rule between tenants ({@link ParkedEviction#victims}: own parked memory first, of others' no more than
     * asked) never binds here; in a cluster it binds between namespaces.
     */
    static final String FLEET_TENANT = "fleet";

    private CoScalingFleet() {}

    /**
     * One kind of function's books under one policy.
     *
     * @param requests requests that arrived
     * @param violations of those, served later than the SLO or never
     * @param scaleOutColdStarts cold starts asked by a scale-out after t = 0
     * @param failedWakeColdStarts cold starts of an instance whose parked one found its GPU full
     * @param wakes parked instances woken on their GPU
     */
    public record KindBooks(double requests, double violations, int scaleOutColdStarts, int failedWakeColdStarts, int wakes) {

        static final KindBooks NONE = new KindBooks(0, 0, 0, 0, 0);

        /** SLO violation rate; 0 without requests. */
        public double svr() {
            return requests == 0 ? 0 : violations / requests;
        }

        public int coldStarts() {
            return scaleOutColdStarts + failedWakeColdStarts;
        }

        KindBooks plus(KindBooks o) {
            return new KindBooks(requests + o.requests, violations + o.violations, scaleOutColdStarts + o.scaleOutColdStarts,
                    failedWakeColdStarts + o.failedWakeColdStarts, wakes + o.wakes);
        }
    }

    /**
     * How a run begins.
     *
     * @param residents placed before any function, in this order, by Algorithm 1, and booked throughout (a training job
     *     that already runs when the functions arrive)
     * @param warm instances of each function ready when the traffic begins, placed after the residents in the fleet's
     *     order (not cold starts); the pool must have room for them
     * @param wakeSeconds from the decision to wake a parked instance to its serving
     */
    public record Start(List<InstanceRequest> residents, int warm, double wakeSeconds) {

        /** The fleet bench's: an empty pool, and each function with no instance until its first requests. */
        public static final Start COLD = new Start(List.of(), 0, CoScalingSimulation.WAKE_SECONDS);

        public Start {
            residents = List.copyOf(residents);
        }
    }

    /**
     * A policy's run of the fleet.
     *
     * @param gpusPeak the most GPUs with anything booked in a second
     * @param gpuSeconds Σ over seconds of the GPUs with anything booked
     * @param parkedOnlyGpuSeconds of those, GPUs that held parked instances alone
     * @param smGpuSeconds Σ over seconds of the SM requests booked, in GPUs
     * @param kinds the books per kind of function
     * @param evictions parked instances let go so that a placement could use their memory
     * @param parkedGibSeconds Σ over seconds of the memory parked instances held
     * @param waitingSeconds Σ over seconds of the instances waiting for room (0 in a pool that holds every policy)
     * @param functions each function's run, by name, in the fleet's order
     */
    public record Outcome(String policy, int gpusPeak, double gpuSeconds, double parkedOnlyGpuSeconds, double smGpuSeconds,
            Map<FleetFunctions.Kind, KindBooks> kinds, int evictions, double parkedGibSeconds, double waitingSeconds,
            Map<String, CoScalingSimulation.Result> functions) {

        public KindBooks kind(FleetFunctions.Kind kind) {
            return kinds.getOrDefault(kind, KindBooks.NONE);
        }

        /** Every function's books together. */
        public KindBooks all() {
            return kinds.values().stream().reduce(KindBooks.NONE, KindBooks::plus);
        }
    }

    /**
     * A pool of {@link ClusterShape#PAPER} nodes that holds every policy's instances, so that only the policies differ,
     * never the capacity: per function twice the instances its busiest second needs at the rate at its request, plus
     * two, each on a GPU of its own.
     */
    public static List<NodeInventory> pool(List<FleetFunctions.Function> functions) {
        long gpus = 0;
        for (FleetFunctions.Function f : functions) {
            double peak = java.util.Arrays.stream(f.trace().rps()).max().orElse(0);
            gpus += 2 * (long) Math.ceil(peak / f.profile().rpsAtRequest()) + 2;
        }
        return ClusterShape.PAPER.nodes((int) Math.ceil((double) gpus / ClusterShape.PAPER.gpusPerNode()));
    }

    /** The fleet under {@code policy}, one made by {@code factory} per function, on {@code nodes}, from {@link Start#COLD}. */
    public static Outcome run(List<FleetFunctions.Function> functions, String policy,
            Function<FunctionProfile, CoScalingPolicy> factory, List<NodeInventory> nodes) {
        return run(functions, policy, factory, nodes, Start.COLD);
    }

    /** The fleet under {@code policy}, one made by {@code factory} per function, on {@code nodes}, begun as {@code start}. */
    public static Outcome run(List<FleetFunctions.Function> functions, String policy,
            Function<FunctionProfile, CoScalingPolicy> factory, List<NodeInventory> nodes, Start start) {
        SharedPool pool = new SharedPool(new ClusterState(nodes), new ComplementaryPlacement(), nodes);
        start.residents().forEach(pool::reside);
        List<FunctionRun> runs = new ArrayList<>(functions.size());
        for (FleetFunctions.Function f : functions) {
            CoScalingPolicy p = factory.apply(f.profile());
            if (pool.shares.put(f.name(), new Shares(milli(p.bookedShare()), milli(p.bookedLimit()), f.profile().memoryMiB(),
                    f.splittable())) != null) {
                throw new IllegalArgumentException("two functions named " + f.name());
            }
            runs.add(new FunctionRun(f.name(), f.trace().rps(), f.profile(), p, start.warm(), start.wakeSeconds(), pool));
        }
        int seconds = functions.stream().mapToInt(f -> f.trace().seconds()).max().orElse(0);
        int peak = 0;
        double gpuSeconds = 0;
        double parkedOnly = 0;
        double sm = 0;
        for (int t = 0; t < seconds; t++) {
            for (FunctionRun run : runs) {
                run.settle(t);
            }
            double[] granted = pool.divide(runs, t);
            for (int i = 0; i < runs.size(); i++) {
                runs.get(i).serve(t, granted[i]);
            }
            pool.handBackParkedOnly();
            int active = pool.book.state().activeGpuCount();
            peak = Math.max(peak, active);
            gpuSeconds += active;
            parkedOnly += pool.book.parkedOnlyGpus();
            sm += pool.book.smRequestMilli() / 1000.0;
        }
        Map<FleetFunctions.Kind, KindBooks> kinds = new EnumMap<>(FleetFunctions.Kind.class);
        Map<String, CoScalingSimulation.Result> results = new LinkedHashMap<>();
        int evictions = 0;
        double parkedGib = 0;
        double waiting = 0;
        for (int i = 0; i < runs.size(); i++) {
            FunctionRun run = runs.get(i);
            CoScalingSimulation.Result r = run.result(functions.get(i).trace().total());
            results.put(run.name(), r);
            CoScalingSimulation.Books b = r.books();
            kinds.merge(functions.get(i).kind(), new KindBooks(r.requests(), r.violations(), b.scaleOutColdStarts(),
                    b.failedWakeColdStarts(), b.wakes()), KindBooks::plus);
            evictions += run.evictions();
            parkedGib += run.parkedGibSeconds();
            waiting += run.waitingSeconds();
        }
        return new Outcome(policy, peak, gpuSeconds, parkedOnly, sm, java.util.Collections.unmodifiableMap(kinds), evictions,
                parkedGib, waiting, java.util.Collections.unmodifiableMap(results));
    }

    private static int milli(double share) {
        return (int) Math.round(share * 1000);
    }

    /** What each instance of a function asks of placement. */
    private record Shares(int requestMilli, int limitMilli, long memoryMiB, boolean splittable) {}

    /** The pool's side of {@link FunctionRun.Pool}: core's {@link InstanceBook} on one {@link ClusterState}. */
    private static final class SharedPool implements FunctionRun.Pool {
        final InstanceBook book;
        final ComplementaryPlacement placement;
        /** By function name. */
        final Map<String, Shares> shares = new HashMap<>();
        /** The instances booked, by id: the book's evictions name them. */
        final Map<String, FunctionRun.Instance> instances = new HashMap<>();
        /** Parked instances by id, the least recently parked first, whose kept mark the book is told each second. */
        final Map<String, FunctionRun.Instance> parked = new LinkedHashMap<>();
        final List<Slot> residentSlots = new ArrayList<>();
        final Map<String, Integer> gpuIndex = new HashMap<>();
        /** Per GPU, in one second: the SM the instances on it take below their limits, and the range they want beyond. */
        final double[] taken;
        final double[] wanted;

        SharedPool(ClusterState state, ComplementaryPlacement placement, List<NodeInventory> nodes) {
            this.book = new InstanceBook(placement, state);
            this.placement = placement;
            nodes.stream().flatMap(n -> n.gpus().stream()).forEach(g -> gpuIndex.put(g.uuid(), gpuIndex.size()));
            taken = new double[gpuIndex.size()];
            wanted = new double[gpuIndex.size()];
        }

        /**
         * Divides each GPU among what serves on it in second {@code t} (the class describes how) and returns, per run,
         * the mean part of their range up to the limit its instances got: 1 where nothing contends.
         */
        double[] divide(List<FunctionRun> runs, int t) {
            java.util.Arrays.fill(taken, 0);
            java.util.Arrays.fill(wanted, 0);
            for (Slot s : residentSlots) {
                int g = gpuIndex.get(s.gpuUuid());
                taken[g] += s.requestMilli();
                wanted[g] += s.limitMilli() - s.requestMilli();
            }
            double[] loads = new double[runs.size()];
            List<List<FunctionRun.Instance>> serving = new ArrayList<>(runs.size());
            for (int i = 0; i < runs.size(); i++) {
                loads[i] = runs.get(i).load(t);
                serving.add(runs.get(i).serving(t));
                for (FunctionRun.Instance instance : serving.get(i)) {
                    for (Slot s : slotsOf(instance)) {
                        int g = gpuIndex.get(s.gpuUuid());
                        taken[g] += s.requestMilli() * Math.min(1, loads[i]);
                        if (loads[i] > 1) {
                            wanted[g] += s.limitMilli() - s.requestMilli();
                        }
                    }
                }
            }
            double[] granted = new double[runs.size()];
            for (int i = 0; i < runs.size(); i++) {
                double sum = 0;
                int ranged = 0;
                for (FunctionRun.Instance instance : loads[i] > 1 ? serving.get(i) : List.<FunctionRun.Instance>of()) {
                    double part = 1;
                    boolean any = false;
                    // A pipeline's stages run at the pace of the slowest.
                    for (Slot s : slotsOf(instance)) {
                        if (s.limitMilli() > s.requestMilli()) {
                            int g = gpuIndex.get(s.gpuUuid());
                            part = Math.min(part, Math.min(1, Math.max(0, InstanceRequest.ONE_GPU_MILLI - taken[g]) / wanted[g]));
                            any = true;
                        }
                    }
                    if (any) {
                        sum += part;
                        ranged++;
                    }
                }
                granted[i] = ranged == 0 ? 1 : sum / ranged;
            }
            return granted;
        }

        /** Where the book has a serving instance: the slots its placement gave it (its wake booked them again). */
        private List<Slot> slotsOf(FunctionRun.Instance instance) {
            return book.booking(instance.id).orElseThrow(() -> new IllegalStateException(instance.id
                    + " serves but is not booked")).placed().slots();
        }

        private InstanceRequest request(FunctionRun.Instance instance) {
            Shares s = shares.get(instance.function.name());
            return new InstanceRequest(instance.id, instance.function.name(), 1, s.requestMilli(), s.limitMilli(), s.memoryMiB(),
                    s.splittable());
        }

        @Override
        public boolean place(FunctionRun.Instance instance) {
            InstanceBook.Placement p = book.place(request(instance), FLEET_TENANT, Optional.empty());
            p.evicted().forEach(this::evicted);
            if (p.decision() instanceof PlacementDecision.Placed placed) {
                book.book(instance.id, FLEET_TENANT, instance.function.name(), placed);
                instances.put(instance.id, instance);
                return true;
            }
            return false;
        }

        /** Places and books {@code resident} for the whole run. */
        void reside(InstanceRequest resident) {
            if (!(placement.decide(book.state(), resident) instanceof PlacementDecision.Placed p)) {
                throw new IllegalArgumentException("no room for resident " + resident.id() + " on the pool");
            }
            book.book(resident.id(), FLEET_TENANT, resident.function(), p);
            residentSlots.addAll(p.slots());
        }

        /** Lets go the parked instances that alone hold their GPUs, so the GPUs go back, as the scheduler extender does. */
        void handBackParkedOnly() {
            if (book.parkedOnlyGpus() == 0) {
                return;
            }
            parked.values().forEach(i -> book.keep(i.id, i.facts.path() == InstanceLifecycle.Path.KEPT));
            book.handBack().forEach(this::evicted);
        }

        /** The book took a parked instance's memory: it is gone. */
        private void evicted(InstanceBook.Evicted gone) {
            FunctionRun.Instance instance = instances.remove(gone.id());
            parked.remove(gone.id());
            instance.function.evicted(instance);
        }

        @Override
        public boolean wake(FunctionRun.Instance instance) {
            if (book.wake(instance.id).isPresent()) {
                return false;
            }
            parked.remove(instance.id);
            return true;
        }

        @Override
        public void park(FunctionRun.Instance instance) {
            book.park(instance.id, instance.facts.parkedAt().orElseThrow());
            parked.put(instance.id, instance);
        }

        @Override
        public void release(FunctionRun.Instance instance) {
            parked.remove(instance.id);
            instances.remove(instance.id);
            book.release(instance.id);
        }
    }
}
