package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.ClusterShape;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The fleet on made-up traces small enough to follow second by second. */
class CoScalingFleetTest {

    static final long GIB = 1024;

    /** The mid-size model's serving at the given shares and memory. */
    static FunctionProfile profile(String name, double request, double limit, long memoryGib) {
        FunctionProfile mid = FunctionProfile.midSize(name);
        return new FunctionProfile(name, mid.sloSeconds(), mid.serviceSeconds(), mid.rpsAtRequest(), mid.rpsAtLimit(), request,
                limit, mid.rpsAtWholeGpu(), mid.coldStartSeconds(), memoryGib * GIB);
    }

    /** {@code rps} in seconds [from, to) of {@code seconds}, none elsewhere. */
    static RateTrace spells(String name, int seconds, double rps, int... fromTo) {
        double[] r = new double[seconds];
        for (int i = 0; i < fromTo.length; i += 2) {
            Arrays.fill(r, fromTo[i], fromTo[i + 1], rps);
        }
        return new RateTrace(name, r);
    }

    /** Dilu's function "a" (30%/50% SM, 10 GiB): busy, idle long enough to park, busy again at 300 s. */
    static FleetFunctions.Function a() {
        return new FleetFunctions.Function("a", FleetFunctions.Kind.INFERENCE, profile("a", 0.30, 0.50, 10), false,
                spells("a", 400, 10, 0, 60, 300, 400));
    }

    /** Dilu for "a", KPA at a static share for every other function. */
    static CoScalingPolicy diluForA(FunctionProfile p) {
        return p.name().equals("a") ? new DiluPolicy(p) : KpaPolicy.kpa(p);
    }

    /** Dilu beside Knative's autoscaler (its revisions never reach zero) for "a", KPA for every other function. */
    static CoScalingPolicy diluAlongsideForA(FunctionProfile p) {
        return p.name().equals("a") ? DiluPolicy.alongside(p) : KpaPolicy.kpa(p);
    }

    /** "c" (10% static, 5 GiB): serving throughout, so that the GPU it shares with "a" stays in use. */
    static FleetFunctions.Function c() {
        return new FleetFunctions.Function("c", FleetFunctions.Kind.INFERENCE, profile("c", 0.10, 0.10, 5), false,
                spells("c", 400, 5, 0, 400));
    }

    @Test
    void whereItMayNotReachZeroAFunctionsLastInstanceParkedAloneOnItsGpuKeepsItAndAnswersTheNextSpellAtOnce() {
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(a()), "dilu-alongside", CoScalingFleetTest::diluAlongsideForA,
                ClusterShape.PAPER.nodes(1));
        CoScalingFleet.KindBooks books = o.kind(FleetFunctions.Kind.INFERENCE);
        assertThat(o.evictions()).as("kept: let go, its ReplicaSet would start another").isZero();
        assertThat(o.parkedOnlyGpuSeconds()).as("parked from about 100 s to 300 s, its GPU held").isBetween(150.0, 220.0);
        assertThat(books.wakes()).isEqualTo(1);
        assertThat(books.coldStarts()).isZero();
    }

    @Test
    void whereItMayReachZeroAFunctionsLastInstanceParkedAloneOnItsGpuGoesWithTheGpu() {
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(a()), "dilu", CoScalingFleetTest::diluForA,
                ClusterShape.PAPER.nodes(1));
        CoScalingFleet.KindBooks books = o.kind(FleetFunctions.Kind.INFERENCE);
        assertThat(o.evictions()).as("nothing else holds its GPU").isEqualTo(1);
        assertThat(o.parkedOnlyGpuSeconds()).as("handed back the second it parks").isZero();
        assertThat(o.gpuSeconds()).as("no GPU while a is idle").isLessThan(400 - 150);
        assertThat(books.wakes()).isZero();
        assertThat(books.scaleOutColdStarts()).as("the next spell starts one").isEqualTo(1);
    }

    /**
     * "c" (KPA, 70% static) fills a GPU's SM beside a's first instance; the instances a burst adds to "a" go to another
     * GPU, and parked there after the burst, hold it alone while a's first instance serves on.
     */
    @Test
    void aParkedInstanceAloneOnItsGpuIsLetGoAndTheGpuHandedBack() {
        FleetFunctions.Function c70 = new FleetFunctions.Function("c", FleetFunctions.Kind.INFERENCE, profile("c", 0.70, 0.70, 5),
                false, spells("c", 400, 20, 0, 400));
        double[] rps = new double[400];
        Arrays.fill(rps, 0, 60, 120); // two instances' worth, one beyond what one serves at its limit
        Arrays.fill(rps, 60, 400, 30);
        FleetFunctions.Function a2 = new FleetFunctions.Function("a", FleetFunctions.Kind.INFERENCE, profile("a", 0.30, 0.50, 10),
                false, new RateTrace("a", rps));
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(c70, a2), "dilu", CoScalingFleetTest::diluForA,
                ClusterShape.PAPER.nodes(1));
        assertThat(o.gpusPeak()).isEqualTo(2);
        assertThat(o.evictions()).as("the burst's instances, parked alone on their GPU, let go").isPositive();
        assertThat(o.parkedOnlyGpuSeconds()).as("a GPU that only a parked model holds goes back at once").isZero();
        assertThat(o.gpuSeconds()).as("one GPU after the burst").isLessThan(400 + 120);
    }

    @Test
    void besideAServingNeighbourItsParkedInstanceKeepsTheGpuAndWakesOnItWithoutAColdStart() {
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(c(), a()), "dilu", CoScalingFleetTest::diluForA,
                ClusterShape.PAPER.nodes(1));
        CoScalingFleet.KindBooks books = o.kind(FleetFunctions.Kind.INFERENCE);
        assertThat(books.wakes()).isEqualTo(1);
        assertThat(books.coldStarts()).isZero();
        assertThat(o.evictions()).isZero();
        assertThat(o.gpusPeak()).as("a placed beside c (workload affinity aside, the active GPU first)").isEqualTo(1);
        assertThat(o.parkedOnlyGpuSeconds()).isZero();
        assertThat(o.parkedGibSeconds()).as("parked from about 100 s to 300 s").isBetween(10.0 * 150, 10.0 * 220);
    }

    /**
     * "b" (KPA, 70% static) arrives at 200 s, while "a" is parked beside "c": Algorithm 1 puts it on their GPU, an active
     * one with its SM free; at 300 s a's wake finds Σ request 110% there, so a starts cold on another GPU.
     */
    @Test
    void aGpuFilledWhileAnInstanceWasParkedFailsItsWakeIntoAColdStartElsewhere() {
        FleetFunctions.Function b = new FleetFunctions.Function("b", FleetFunctions.Kind.LLM, profile("b", 0.70, 0.70, 10), false,
                spells("b", 400, 20, 200, 400));
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(c(), a(), b), "dilu", CoScalingFleetTest::diluForA,
                ClusterShape.PAPER.nodes(1));
        CoScalingFleet.KindBooks books = o.kind(FleetFunctions.Kind.INFERENCE);
        assertThat(books.wakes()).isZero();
        assertThat(books.failedWakeColdStarts()).isEqualTo(1);
        assertThat(books.scaleOutColdStarts()).isZero();
        assertThat(books.violations()).as("a's requests wait for the cold start").isPositive();
    }

    /**
     * One GPU: "a" parks 30 GiB there beside "c"; "b" (FaST-GS+, which starts nothing before its traffic) asks 20 GiB at
     * 200 s: the GPU has the memory only once a's parked instance is evicted.
     */
    @Test
    void aPlacementWithoutMemoryEvictsTheParkedInstanceThatHoldsIt() {
        FleetFunctions.Function a = new FleetFunctions.Function("a", FleetFunctions.Kind.INFERENCE, profile("a", 0.30, 0.50, 30),
                false, spells("a", 400, 10, 0, 60));
        FleetFunctions.Function b = new FleetFunctions.Function("b", FleetFunctions.Kind.LLM, profile("b", 0.30, 0.50, 20), false,
                spells("b", 400, 20, 200, 400));
        List<NodeInventory> oneGpu = List.of(NodeInventory.uniform("n", 1, ClusterShape.PAPER.model(),
                ClusterShape.PAPER.gpuMemoryMib(), 108));
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(c(), a, b), "mixed",
                p -> p.name().equals("a") ? new DiluPolicy(p) : p.name().equals("b") ? new FastGsPolicy(p) : KpaPolicy.kpa(p),
                oneGpu);
        assertThat(o.evictions()).isEqualTo(1);
        assertThat(o.waitingSeconds()).as("b's instance placed at once, in a's memory").isZero();
        assertThat(o.kind(FleetFunctions.Kind.LLM).scaleOutColdStarts()).isEqualTo(1);
        assertThat(o.kind(FleetFunctions.Kind.LLM).svr()).isLessThan(0.2);
        assertThat(o.parkedGibSeconds()).as("parked from about 100 s until b's decision at 209 s")
                .isBetween(30.0 * 90, 30.0 * 130);
    }
    @Test
    void aWarmStartServesFromTheFirstSecondWhereAColdOneWaitsItsColdStart() {
        CoScalingSimulation.Result cold = CoScalingFleet.run(List.of(a()), "dilu", CoScalingFleetTest::diluAlongsideForA,
                ClusterShape.PAPER.nodes(1)).functions().get("a");
        CoScalingSimulation.Result warm = CoScalingFleet.run(List.of(a()), "dilu", CoScalingFleetTest::diluAlongsideForA,
                ClusterShape.PAPER.nodes(1), new CoScalingFleet.Start(List.of(), 1, CoScalingSimulation.WAKE_SECONDS))
                .functions().get("a");
        assertThat(cold.coldStarts()).as("the deployment at t=0").isEqualTo(1);
        assertThat(cold.violations()).as("the first seconds' requests wait for the cold start").isPositive();
        assertThat(warm.coldStarts()).as("an instance ready when the traffic begins is no cold start").isZero();
        assertThat(warm.violations()).isZero();
        assertThat(warm.instances()[0]).isEqualTo(1);
    }

    /** Dilu beside Knative's autoscaler for every function. */
    static CoScalingPolicy alongside(FunctionProfile p) {
        return DiluPolicy.alongside(p);
    }

    static List<NodeInventory> gpus(int n) {
        return List.of(NodeInventory.uniform("n", n, ClusterShape.PAPER.model(), ClusterShape.PAPER.gpuMemoryMib(), 108));
    }

    /**
     * "x" (30%/80%) and "y" (30%/70%), one instance each, share one GPU, as γ = 1.5 lets them (Σ limit 150%; a second
     * instance of either would pass it), and each asks 70 rps: beyond the 50 its request serves, within the 80 its limit
     * does. Busy in turn, each gets its whole range; busy at once, they divide the 40% beyond their requests, 4/9 of
     * the 90% they want, and each serves about 63 rps, so a queue grows.
     */
    @Test
    void limitsAboveTheGpuAreMetOnlyWhileTheirHoldersDoNotWantThemAtOnce() {
        CoScalingFleet.Start warm = new CoScalingFleet.Start(List.of(), 1, CoScalingSimulation.WAKE_SECONDS);
        FleetFunctions.Function x = new FleetFunctions.Function("x", FleetFunctions.Kind.INFERENCE, profile("x", 0.30, 0.80, 5),
                false, spells("x", 400, 70, 0, 200));
        FleetFunctions.Function yAfter = new FleetFunctions.Function("y", FleetFunctions.Kind.INFERENCE,
                profile("y", 0.30, 0.70, 5), false, spells("y", 400, 70, 200, 400));
        FleetFunctions.Function yWith = new FleetFunctions.Function("y", FleetFunctions.Kind.INFERENCE,
                profile("y", 0.30, 0.70, 5), false, spells("y", 400, 70, 0, 200));

        CoScalingFleet.Outcome inTurn = CoScalingFleet.run(List.of(x, yAfter), "dilu", CoScalingFleetTest::alongside, gpus(1), warm);
        CoScalingFleet.Outcome atOnce = CoScalingFleet.run(List.of(x, yWith), "dilu", CoScalingFleetTest::alongside, gpus(1), warm);

        assertThat(inTurn.gpusPeak()).isEqualTo(1);
        assertThat(inTurn.all().violations()).as("each served at up to 80 rps").isZero();
        assertThat(atOnce.all().violations()).as("each served at about 63 of its 70 rps").isPositive();
        assertThat(atOnce.all().requests()).isEqualTo(inTurn.all().requests());
    }

    /**
     * "a" (30%/60%) needs a second instance at 100 rps. Σ request 60% and Σ limit 120% would fit its GPU by Ω and γ, and
     * the other GPU is not in use, but its instances want their limits at the same moment, which one GPU cannot give:
     * the second opens the other GPU.
     */
    @Test
    void aFunctionsScaleOutGoesWhereItsLimitIsReal() {
        FleetFunctions.Function a = new FleetFunctions.Function("a", FleetFunctions.Kind.INFERENCE, profile("a", 0.30, 0.60, 5),
                false, spells("a", 200, 100, 0, 200));
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(a), "dilu", CoScalingFleetTest::alongside, gpus(2),
                new CoScalingFleet.Start(List.of(), 1, CoScalingSimulation.WAKE_SECONDS));
        assertThat(Arrays.stream(o.functions().get("a").instances()).max().orElseThrow()).isEqualTo(2);
        assertThat(o.gpusPeak()).isEqualTo(2);
    }

    /** One GPU, a training job booking 80% of its SM before "a" arrives: a's 30% never fits, and waits as unscheduled. */
    @Test
    void aResidentIsBookedBeforeEveryFunctionAndKeepsItsShare() {
        List<NodeInventory> oneGpu = List.of(NodeInventory.uniform("n", 1, ClusterShape.PAPER.model(),
                ClusterShape.PAPER.gpuMemoryMib(), 108));
        InstanceRequest train = new InstanceRequest("train", "train", 1, 800, 800, 8 * GIB, false);
        CoScalingFleet.Outcome o = CoScalingFleet.run(List.of(a()), "dilu", CoScalingFleetTest::diluForA, oneGpu,
                new CoScalingFleet.Start(List.of(train), 0, CoScalingSimulation.WAKE_SECONDS));
        assertThat(o.functions().get("a").violationRate()).as("never placed, never served").isEqualTo(1.0);
        assertThat(o.waitingSeconds()).as("while a has traffic or is not yet let go").isPositive();
        assertThat(o.gpuSeconds()).as("the training job's GPU, every second").isEqualTo(400);
        InstanceRequest whole = new InstanceRequest("big", "big", 1, 1000, 1000, ClusterShape.PAPER.gpuMemoryMib() + 1, false);
        assertThatThrownBy(() -> CoScalingFleet.run(List.of(a()), "dilu", CoScalingFleetTest::diluForA, oneGpu,
                new CoScalingFleet.Start(List.of(whole), 0, CoScalingSimulation.WAKE_SECONDS)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("resident big");
    }
}
