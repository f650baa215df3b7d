package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Algorithm 1's rules, one at a time, on small clusters of 40 GB GPUs. */
class ComplementaryPlacementTest {

    private static final long GB = 1024;
    private final ComplementaryPlacement dilu = new ComplementaryPlacement();

    private static ClusterState cluster(int nodes, int gpusPerNode) {
        List<NodeInventory> inventory = new java.util.ArrayList<>();
        for (int n = 0; n < nodes; n++) {
            inventory.add(NodeInventory.uniform("n" + n, gpusPerNode, "A100-40GB", 40 * GB, 108));
        }
        return new ClusterState(inventory);
    }

    private static InstanceRequest req(String id, String fn, int request, int limit, long memGb) {
        return new InstanceRequest(id, fn, 1, request, limit, memGb * GB, false);
    }

    private PlacementDecision.Placed place(ClusterState state, InstanceRequest r) {
        PlacementDecision d = dilu.decide(state, r);
        assertThat(d).as("decision for %s", r.id()).isInstanceOf(PlacementDecision.Placed.class);
        PlacementDecision.Placed placed = (PlacementDecision.Placed) d;
        state.apply(r.id(), r.function(), placed);
        return placed;
    }

    private static String gpuOf(PlacementDecision.Placed p) {
        return p.slots().getFirst().gpuUuid();
    }

    @Test
    void bestFitPicksTheFullestActiveGpuThatStillHoldsTheInstance() {
        ClusterState state = cluster(1, 4);
        String a = gpuOf(place(state, req("a", "f1", 300, 500, 5)));
        String b = gpuOf(place(state, req("b", "f2", 700, 900, 5))); // does not fit beside a (Σlim 1.4 ok, Σreq 1.0 ok)
        assertThat(b).isEqualTo(a); // Σreq = 1.0 ≤ Ω, Σlim = 1.4 ≤ γ: shares a's GPU
        String c = gpuOf(place(state, req("c", "f3", 100, 100, 5)));
        assertThat(c).as("a's GPU is full on requests").isNotEqualTo(a);
        String d = gpuOf(place(state, req("d", "f4", 500, 600, 5)));
        assertThat(d).as("best fit: the GPU already holding c").isEqualTo(c);
        assertThat(state.activeGpuCount()).isEqualTo(2);
    }

    @Test
    void aBookingThatGrowsInPlaceIsJudgedByTheSameBoundsAsAPlacement() {
        ClusterState state = cluster(1, 1);
        String gpu = gpuOf(place(state, req("serving", "f1", 600, 900, 5)));
        assertThat(dilu.refusal(state, "f2", new Slot(gpu, 400, 600, 0))).as("Σ request 100%, Σ limit 150%: room").isEmpty();
        assertThat(dilu.refusal(state, "f2", new Slot(gpu, 500, 600, 0))).hasValue("GPU " + gpu
                + " would hold SM request 110% (Ω = 100%), limit 150% (γ = 150%), 5120 of 40960 MiB");
        assertThat(dilu.refusal(state, "f2", new Slot(gpu, 100, 700, 0))).as("γ binds as well")
                .hasValueSatisfying(r -> assertThat(r).contains("limit 160% (γ = 150%)"));
        assertThat(dilu.refusal(state, "f2", new Slot("GPU-unknown", 100, 100, 0))).hasValue("GPU GPU-unknown is in no node's inventory");
    }

    /**
     * The paper's example (§3.3, Principle 1): instance-1 of Func-b shares a GPU with one worker of training
     * Func-a; the new instance-2 of Func-b goes beside Func-a's other worker — not beside Func-c, the better
     * fit, and not onto its own replica's GPU — so both workers of Func-a have the same neighbour.
     */
    @Test
    void aFunctionsNextInstanceFollowsTheTrainingJobItsFirstSitsBeside() {
        ClusterState state = cluster(1, 4);
        PlacementDecision.Placed a = place(state, new InstanceRequest("a", "func-a", 2, 400, 1000, 10 * GB, false));
        String worker1 = a.slots().get(0).gpuUuid();
        String worker2 = a.slots().get(1).gpuUuid();
        // Func-c cannot join a worker (Σlimit 1.9 > γ): a GPU of its own, fuller than either worker's.
        String c = gpuOf(place(state, req("c", "func-c", 500, 900, 10)));
        assertThat(c).isNotIn(worker1, worker2);
        // Given, as in the paper: Func-b's instance-1 sits beside worker 1.
        state.apply("b-1", "func-b", new PlacementDecision.Placed(a.node(),
                List.of(new Slot(worker1, 200, 300, 5 * GB))));
        String b2 = gpuOf(place(state, req("b-2", "func-b", 200, 300, 5)));
        assertThat(b2).as("Func-b's instance-2 beside Func-a's worker 2").isEqualTo(worker2);
    }

    /** The local-cluster demo's mix: every worker of the training job gets an inference neighbour. */
    @Test
    void eachTrainingWorkerGetsAnInferenceNeighbour() {
        ClusterState state = cluster(1, 4);
        PlacementDecision.Placed train = place(state, new InstanceRequest("train", "gpt2-train", 2, 400, 800, 8 * GB, false));
        for (String id : List.of("resnet50-1", "bert-1", "resnet50-2", "bert-2")) {
            String fn = id.substring(0, id.indexOf('-'));
            place(state, fn.equals("resnet50") ? req(id, fn, 300, 600, 4) : req(id, fn, 200, 400, 3));
        }
        for (Slot worker : train.slots()) {
            assertThat(state.usage(worker.gpuUuid()).instances()).as("instances on %s", worker.gpuUuid()).isGreaterThan(1);
        }
    }

    @Test
    void replicasOfOneFunctionShareAGpuOnlyWhenNoOtherActiveGpuHoldsThem() {
        ClusterState state = cluster(1, 4);
        String f1 = gpuOf(place(state, req("f-1", "f", 600, 800, 5)));
        String g1 = gpuOf(place(state, req("g-1", "g", 300, 800, 5))); // Σlimit 1.6 > γ beside f-1: a new GPU
        assertThat(g1).isNotEqualTo(f1);
        String f2 = gpuOf(place(state, req("f-2", "f", 100, 200, 5)));
        assertThat(f2).as("beside g-1, although f-1's GPU is the better fit").isEqualTo(g1);
        String f3 = gpuOf(place(state, req("f-3", "f", 100, 200, 5)));
        assertThat(f3).as("every active GPU hosts f: stacked rather than a new GPU").isIn(f1, g1);
        assertThat(state.activeGpuCount()).isEqualTo(2);
    }

    @Test
    void omegaGammaAndMemoryEachOpenANewGpu() {
        ClusterState state = cluster(1, 4);
        String first = gpuOf(place(state, req("a", "f", 600, 1000, 10)));
        assertThat(gpuOf(place(state, req("omega", "o", 500, 500, 1)))).as("Σreq 1.1 > Ω").isNotEqualTo(first);

        ClusterState s2 = cluster(1, 4);
        String g2 = gpuOf(place(s2, req("a", "f", 300, 1000, 10)));
        assertThat(gpuOf(place(s2, req("gamma", "o", 300, 600, 1)))).as("Σlim 1.6 > γ").isNotEqualTo(g2);

        ClusterState s3 = cluster(1, 4);
        String g3 = gpuOf(place(s3, req("a", "f", 100, 200, 30)));
        assertThat(gpuOf(place(s3, req("mem", "o", 100, 200, 11)))).as("41 GB > 40 GB").isNotEqualTo(g3);
    }

    @Test
    void aNewGpuIsOpenedOnANodeAlreadyInUse() {
        ClusterState state = cluster(3, 4);
        PlacementDecision.Placed a = place(state, req("a", "f", 900, 1000, 5));
        PlacementDecision.Placed b = place(state, req("b", "g", 900, 1000, 5));
        assertThat(b.node()).isEqualTo(a.node());
        assertThat(gpuOf(b)).isNotEqualTo(gpuOf(a));
    }

    @Test
    void multiGpuInstancesGetDistinctGpusOfOneNode() {
        ClusterState state = cluster(3, 4);
        place(state, req("x", "x", 200, 300, 5));
        PlacementDecision.Placed t = place(state, new InstanceRequest("t", "train", 4, 500, 700, 30 * GB, false));
        assertThat(t.slots()).hasSize(4);
        assertThat(t.slots()).extracting(Slot::gpuUuid).doesNotHaveDuplicates().allMatch(u -> u.startsWith(t.node()));
        PlacementDecision.Placed t2 = place(state, new InstanceRequest("t2", "train", 2, 500, 700, 30 * GB, false));
        assertThat(t2.node()).as("n0 has no two GPUs with 30 GB free").isNotEqualTo(t.node());
    }

    @Test
    void aSplittableModelIsCutIntoStagesOverFragmentsBeforeANewGpu() {
        ClusterState state = cluster(1, 4);
        place(state, req("t1", "train", 500, 700, 22));
        place(state, req("t2", "train", 500, 700, 22)); // same function: joins t1? 44 GB > 40: second GPU
        assertThat(state.activeGpuCount()).isEqualTo(2);
        InstanceRequest llm = new InstanceRequest("llm", "llama", 1, 400, 600, 30 * GB, true);
        PlacementDecision.Placed p = place(state, llm);
        assertThat(p.slots()).hasSize(2);
        assertThat(p.slots()).extracting(Slot::memoryMib).containsExactly(18 * GB, 12 * GB);
        assertThat(p.slots()).as("in proportion to the memory each stage holds, adding up exactly, in whole percents")
                .extracting(Slot::requestMilli).containsExactly(240, 160);
        assertThat(p.slots()).extracting(Slot::limitMilli).containsExactly(360, 240);
        assertThat(state.activeGpuCount()).as("no new GPU opened").isEqualTo(2);
    }

    @Test
    void sharesAreApportionedExactlyWithAtLeastOneEach() {
        assertThat(Apportion.largestRemainder(40, new long[] {18, 12})).containsExactly(24, 16);
        assertThat(Apportion.largestRemainder(10, new long[] {1, 1, 1})).containsExactly(4, 3, 3);
        assertThat(Apportion.largestRemainder(3, new long[] {1000, 1, 1})).containsExactly(1, 1, 1);
        assertThat(Apportion.largestRemainder(2, new long[] {1, 1, 1})).isNull();
    }

    @Test
    void aStagesLimitIsTheInstancesLimitByMemoryNeverBelowItsRequest() {
        assertThat(Apportion.stageLimits(60, new int[] {24, 16}, new long[] {18, 12})).containsExactly(36, 24);
        // 12 by memory would leave the first stage below its request of 15 (a request apportioned with another unit).
        assertThat(Apportion.stageLimits(24, new int[] {15, 5}, new long[] {1, 1})).containsExactly(15, 12);
        assertThat(Apportion.stageLimits(10, new int[] {8, 8}, new long[] {3, 1})).as("a limit below the requests: their sum")
                .containsExactly(12, 8);
    }

    @Test
    void aModelLargerThanAnyGpuIsSplitOverIdleGpusOfOneNode() {
        ClusterState state = cluster(2, 4);
        PlacementDecision.Placed p = place(state, new InstanceRequest("big", "llama-70b", 1, 600, 800, 100 * GB, true));
        assertThat(p.slots()).hasSize(3);
        assertThat(p.slots().stream().mapToLong(Slot::memoryMib).sum()).isEqualTo(100 * GB);
    }

    @Test
    void infeasibleRequestsComeBackWithAReasonNotAnException() {
        ClusterState state = cluster(1, 4);
        assertThat(dilu.decide(state, new InstanceRequest("x", "f", 8, 100, 100, GB, false)))
                .isEqualTo(new PlacementDecision.Infeasible("needs 8 GPUs on one node; no node has more than 4"));
        assertThat(dilu.decide(state, req("y", "f", 100, 200, 41)))
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.type(PlacementDecision.Infeasible.class))
                .extracting(PlacementDecision.Infeasible::reason).asString()
                .contains("41984 MiB").contains("40960 MiB");
        for (int i = 0; i < 4; i++) {
            place(state, req("full" + i, "f" + i, 1000, 1000, 1));
        }
        assertThat(dilu.decide(state, req("z", "f", 100, 200, 1)))
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.type(PlacementDecision.Infeasible.class))
                .extracting(PlacementDecision.Infeasible::reason).asString()
                .startsWith("no node has a GPU with 1024 MiB free");
        assertThat(state.placedInstances()).isEqualTo(4);
    }

    @Test
    void releaseGivesTheGpuBack() {
        ClusterState state = cluster(1, 2);
        place(state, req("a", "f", 500, 600, 10));
        assertThat(state.activeGpuCount()).isEqualTo(1);
        assertThat(state.release("a")).isTrue();
        assertThat(state.release("a")).isFalse();
        assertThat(state.activeGpuCount()).isZero();
        assertThat(state.usage("n0-gpu0")).isEqualTo(new ClusterState.GpuUsage("n0-gpu0", "n0", 0, 0, 0, 40 * GB, 0));
    }

    @Test
    void staticQuotasBookTheLimitAndExclusiveBooksWholeGpus() {
        ClusterState state = cluster(1, 4);
        PlacementPolicy staticLimit = new StaticQuotaPlacement();
        PlacementDecision.Placed p = (PlacementDecision.Placed) staticLimit.decide(state, req("a", "f", 300, 600, 5));
        assertThat(p.slots().getFirst().requestMilli()).isEqualTo(600);

        PlacementPolicy exclusive = new ExclusivePlacement();
        ClusterState ex = cluster(1, 4);
        for (int i = 0; i < 4; i++) {
            PlacementDecision.Placed e = (PlacementDecision.Placed) exclusive.decide(ex, req("e" + i, "f", 100, 100, 1));
            ex.apply("e" + i, "f", e);
        }
        assertThat(ex.activeGpuCount()).isEqualTo(4);
        assertThat(exclusive.decide(ex, req("e4", "f", 100, 100, 1))).isInstanceOf(PlacementDecision.Infeasible.class);
    }

    /** A wake asks whether its shares fit again on the GPU that kept its memory: each of Algorithm 1's limits refuses. */
    @Test
    void aSlotFitsOnItsGpuOnlyWithinOmegaGammaAndItsMemory() {
        ClusterState state = cluster(1, 1);
        String gpu = gpuOf(place(state, req("a", "f1", 600, 900, 30)));
        assertThat(dilu.fits(state, "f2", new Slot(gpu, 400, 600, 10 * GB))).as("Σreq 1.0, Σlim 1.5, 40 GB: at every bound").isTrue();
        assertThat(dilu.fits(state, "f2", new Slot(gpu, 410, 500, 5 * GB))).as("Σreq 1.01 > Ω").isFalse();
        assertThat(dilu.fits(state, "f2", new Slot(gpu, 300, 610, 5 * GB))).as("Σlim 1.51 > γ").isFalse();
        assertThat(dilu.fits(state, "f2", new Slot(gpu, 100, 200, 10 * GB + 1))).as("memory beyond 40 GB").isFalse();
        assertThat(dilu.fits(state, "f2", new Slot(gpu, 0, 0, 10 * GB))).as("a parked instance: its memory alone").isTrue();
        org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                .isThrownBy(() -> dilu.fits(state, "f2", new Slot("no-such-gpu", 100, 200, GB)));
    }

    /**
     * The demo's burst (issue 47): bert-large at request 20% / limit 40%. Stacked, three replicas passed both Ω and γ and
     * promised 120% of one GPU; now the third goes beside a complementary neighbour, and replicas stack only while their
     * limits fit in the GPU.
     */
    @Test
    void aFunctionsReplicasNeverPromiseOneGpuMoreThanItHas() {
        ClusterState state = cluster(1, 2);
        String other = gpuOf(place(state, req("resnet-0", "resnet", 300, 300, 5)));
        String first = gpuOf(place(state, req("bert-0", "bert", 200, 400, 5)));
        assertThat(first).as("complementary: beside resnet").isEqualTo(other);
        String second = gpuOf(place(state, req("bert-1", "bert", 200, 400, 5)));
        assertThat(second).as("Σ limit of bert on resnet's GPU 80%: still stacks before a new GPU").isEqualTo(other);
        String third = gpuOf(place(state, req("bert-2", "bert", 200, 400, 5)));
        assertThat(third).as("Σ request 90%%, Σ limit 150%% ≤ γ, but bert's own limits would be 120%%").isNotEqualTo(other);
        assertThat(state.usage(other).limitMilli()).isEqualTo(1100);
        String fourth = gpuOf(place(state, req("bert-3", "bert", 200, 400, 5)));
        assertThat(fourth).as("two replicas' 80%% fit on the other GPU").isEqualTo(third);
        assertThat(dilu.decide(state, req("bert-4", "bert", 200, 400, 5))).as("no GPU has room for bert's limit")
                .isInstanceOf(PlacementDecision.Infeasible.class);
        assertThat(dilu.decide(state, req("vit-0", "vit", 200, 400, 5))).as("another function still fits")
                .isInstanceOf(PlacementDecision.Placed.class);
    }

    /** A wake takes its limit back where the function's other instances may have taken it: the same rule refuses it. */
    @Test
    void aWakeIsRefusedWhereTheFunctionsLimitsWouldPassTheGpu() {
        InstanceBook book = new InstanceBook(dilu, cluster(1, 1));
        PlacementDecision.Placed a = (PlacementDecision.Placed) dilu.decide(book.state(), req("bert-0", "bert", 200, 400, 5));
        book.book("bert-0", "t", "bert", a);
        String gpu = gpuOf(a);
        book.park("bert-0", java.time.Instant.EPOCH);
        for (int i = 1; i <= 3; i++) {
            PlacementDecision.Placed p = (PlacementDecision.Placed) dilu.decide(book.state(), req("bert-" + i, "bert", 200, 300, 5));
            assertThat(gpuOf(p)).as("a parked replica holds no limit: bert-%d stacks", i).isEqualTo(gpu);
            book.book("bert-" + i, "t", "bert", p);
        }
        assertThat(book.wake("bert-0")).as("Σ request 80%%, Σ limit 130%% ≤ γ, but bert's own limits 130%%")
                .hasValue("no room to serve again: GPU " + gpu + " would hold SM request 80% (Ω = 100%), limit 130% (γ = 150%), "
                        + "20480 of 40960 MiB, and SM limit 130% for bert's own instances (at most 100%)");
        book.release("bert-3");
        assertThat(book.wake("bert-0")).as("bert's limits 100%% with it").isEmpty();
    }
}
