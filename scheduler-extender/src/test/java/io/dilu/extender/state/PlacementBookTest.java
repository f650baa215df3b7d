package io.dilu.extender.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.kube.PodShare;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PlacementBookTest {

    static final Instant T0 = Instant.parse("2026-11-22T10:00:00Z");
    static final List<String> NODES = List.of("n0", "n1");
    PlacementBook book;

    static List<GpuDevice> gpus(String node, int count) {
        return IntStream.range(0, count).mapToObj(i -> new GpuDevice(node + "-gpu" + i, i, "A100", 40_960, 108)).toList();
    }

    static PodShare pod(String uid, int sm, long memory, Map<String, String> annotations) {
        return new PodShare(uid, "ns", "p-" + uid, Optional.empty(), false, "f-" + uid, annotations,
                List.of(new PodShare.Container("c0", sm, Optional.of(memory))), false);
    }

    @BeforeEach
    void cluster() {
        book = new PlacementBook(PlacementParameters.DEFAULTS, 1024, Duration.ofSeconds(30));
        book.putNode("n0", gpus("n0", 2));
        book.putNode("n1", gpus("n1", 2));
    }

    @Test
    void aReservationIsBookedAtOnceSoTwoPodsInFlightNeverShareTheRoom() {
        var a = book.filter(pod("a", 60, 1000, Map.of()), NODES, T0);
        var b = book.filter(pod("b", 60, 1000, Map.of()), NODES, T0);
        assertThat(a.node()).isPresent();
        assertThat(b.node()).isPresent();
        assertThat(book.placement("a").orElseThrow().slots().getFirst().gpuUuid())
                .isNotEqualTo(book.placement("b").orElseThrow().slots().getFirst().gpuUuid());
        assertThat(book.activeUsage()).allMatch(u -> u.requestMilli() <= 1000);
    }

    @Test
    void aPipelinePodIsSplitOverFragmentsBoundWithItsStagesAndBookedFromThemAfterARestart() {
        for (int i = 0; i < 4; i++) {
            PodShare filler = pod("fill" + i, 20, 25_600, Map.of());
            String node = book.filter(filler, NODES, T0).node().orElseThrow();
            book.startBinding(filler.uid(), "ns", filler.name(), node);
            book.bindSucceeded(filler.uid());
        }
        Map<String, String> split = Map.of(DiluNames.SPLIT, DiluNames.SPLIT_PIPELINE);
        assertThat(book.filter(pod("plain", 20, 24_576, Map.of()), NODES, T0).node())
                .as("without the opt-in a 24 GB model gets no GPU: 15 GB free on each").isEmpty();
        PodShare llm = pod("llm", 20, 24_576, split);
        String node = book.filter(llm, NODES, T0).node().orElseThrow();
        var assign = (PlacementBook.BindPlan.Assign) book.startBinding("llm", "ns", "p-llm", node);
        assertThat(assign.gpus().isSplit()).isTrue();
        assertThat(assign.gpus().splitPercent()).isEqualTo(20);
        assertThat(assign.gpus().stages()).extracting(s -> s.memoryMib()).containsExactly(15_360L, 9_216L);
        book.bindSucceeded("llm");
        List<ClusterState.GpuUsage> before = book.activeUsage();

        // A restarted extender books the split from the pod's annotation alone.
        PlacementBook restarted = new PlacementBook(PlacementParameters.DEFAULTS, 1024, Duration.ofSeconds(30));
        restarted.putNode("n0", gpus("n0", 2));
        restarted.putNode("n1", gpus("n1", 2));
        for (ClusterState.GpuUsage u : before) {
            assertThat(u.requestMilli()).isLessThanOrEqualTo(1000);
        }
        for (int i = 0; i < 4; i++) {
            var placed = book.placement("fill" + i).orElseThrow();
            restarted.observe(new PodShare("fill" + i, "ns", "p-fill" + i, Optional.of(placed.node()), false, "f-fill" + i,
                    Map.of(DiluNames.ASSIGNED_GPUS, placed.slots().getFirst().gpuUuid()), pod("x", 20, 25_600, Map.of()).containers(), false));
        }
        Map<String, String> annotations = new HashMap<>(split);
        annotations.put(DiluNames.ASSIGNED_GPUS, assign.gpus().format());
        restarted.observe(new PodShare("llm", "ns", "p-llm", Optional.of(node), false, "f-llm", annotations, llm.containers(), false));
        assertThat(restarted.activeUsage()).containsExactlyInAnyOrderElementsOf(before);
        assertThat(restarted.filter(pod("big", 20, 40_960, split), NODES, T0).node())
                .as("36 GB left in fragments: too few for 40 GB").isEmpty();
    }

    @Test
    void aReservationWithoutBindExpiresAndAFailedBindIsRolledBack() {
        book.filter(pod("a", 60, 1000, Map.of()), NODES, T0);
        assertThat(book.activeUsage()).hasSize(1);
        book.filter(pod("other", 10, 100, Map.of()), NODES, T0.plusSeconds(31));
        assertThat(book.placement("a")).as("expired after 30 s").isEmpty();

        book.filter(pod("b", 60, 1000, Map.of()), NODES, T0);
        String node = book.reservedNode("b").orElseThrow();
        assertThat(book.startBinding("b", "ns", "p-b", node)).isInstanceOf(PlacementBook.BindPlan.Assign.class);
        book.bindFailed("b");
        assertThat(book.placement("b")).isEmpty();
        assertThat(book.activeUsage()).extracting(ClusterState.GpuUsage::requestMilli).containsExactly(100);
    }

    @Test
    void aBindingNeverExpiresAndABindElsewhereIsRefused() {
        book.filter(pod("a", 50, 1000, Map.of()), NODES, T0);
        String node = book.reservedNode("a").orElseThrow();
        String other = node.equals("n0") ? "n1" : "n0";
        assertThat(book.startBinding("a", "ns", "p-a", other)).isInstanceOfSatisfying(PlacementBook.BindPlan.Refuse.class,
                r -> assertThat(r.reason()).contains("reserved on node " + node));
        var assign = (PlacementBook.BindPlan.Assign) book.startBinding("a", "ns", "p-a", node);
        assertThat(assign.gpus().uuids()).singleElement().asString().startsWith(node + "-");
        book.bindSucceeded("a");
        book.filter(pod("x", 10, 10, Map.of()), NODES, T0.plusSeconds(3600));
        assertThat(book.placement("a")).isPresent();
        assertThat(book.startBinding("nobody", "ns", "p-nobody", node)).isInstanceOfSatisfying(
                PlacementBook.BindPlan.Refuse.class, r -> assertThat(r.cause()).isEqualTo(PlacementBook.BindPlan.Cause.NOT_RESERVED));
    }

    @Test
    void boundPodsFromTheApiServerAreBookedAndARestartedBookKnowsThem() {
        Map<String, String> annotations = new HashMap<>(Map.of(DiluNames.ASSIGNED_GPUS, "n1-gpu1", DiluNames.SM_LIMIT, "90"));
        PodShare bound = new PodShare("u1", "ns", "p", Optional.of("n1"), false, "f", annotations,
                List.of(new PodShare.Container("c0", 70, Optional.of(30_000L))), false);
        book.observe(bound);
        assertThat(book.activeUsage()).singleElement().satisfies(u -> {
            assertThat(u.uuid()).isEqualTo("n1-gpu1");
            assertThat(u.requestMilli()).isEqualTo(700);
            assertThat(u.limitMilli()).isEqualTo(900);
            assertThat(u.memoryMib()).isEqualTo(30_000);
        });
        // 40% more does not fit next to 70% on that GPU: the new pod goes elsewhere.
        book.filter(pod("b", 40, 1000, Map.of()), List.of("n1"), T0);
        assertThat(book.placement("b").orElseThrow().slots().getFirst().gpuUuid()).isEqualTo("n1-gpu0");
        book.observe(new PodShare("u1", "ns", "p", Optional.of("n1"), true, "f", annotations, bound.containers(), false));
        assertThat(book.placement("u1")).as("finished pods free their GPU").isEmpty();
    }

    @Test
    void nodesArriveAndLeaveWithoutLosingBookings() {
        book.observe(new PodShare("u1", "ns", "p", Optional.of("n2"), false, "f", Map.of(DiluNames.ASSIGNED_GPUS, "n2-gpu0"),
                List.of(new PodShare.Container("c0", 50, Optional.of(1000L))), false));
        assertThat(book.activeUsage()).isEmpty(); // n2 has not published its GPUs yet
        book.putNode("n2", gpus("n2", 1));
        assertThat(book.activeUsage()).extracting(ClusterState.GpuUsage::uuid).containsExactly("n2-gpu0");
        var f = book.filter(pod("b", 60, 1000, Map.of()), List.of("n2"), T0);
        assertThat(f.node()).isEmpty();
        assertThat(f.failed().get("n2")).contains("Ω");
    }

    @Test
    void unplaceablePodsAndUnknownNodesGetReasonsAUserCanRead() {
        var f = book.filter(pod("big", 20, 100_000, Map.of()), List.of("n0", "n9"), T0);
        assertThat(f.node()).isEmpty();
        assertThat(f.failed().get("n0")).contains("100000 MiB").contains("largest GPU has 40960 MiB");
        assertThat(f.failed().get("n9")).contains("no GPU inventory");
        var bad = book.filter(pod("bad", 30, 100, Map.of(DiluNames.SM_LIMIT, "10")), NODES, T0);
        assertThat(bad.failed().get("n0")).isEqualTo("dilu.io/sm-limit=10 is not allowed: must be an integer percent in 30..100 (request..100)");
        var split = book.filter(new PodShare("s", "ns", "s", Optional.empty(), false, "f", Map.of(),
                List.of(new PodShare.Container("a", 30, Optional.of(100L)), new PodShare.Container("b", 40, Optional.of(100L))), false), NODES, T0);
        assertThat(split.failed().get("n1")).contains("different GPU shares");
    }

    @Test
    void aMultiGpuPodGetsDistinctGpusOfOneNodeInContainerOrder() {
        PodShare two = new PodShare("t", "ns", "t", Optional.empty(), false, "train", Map.of(),
                List.of(new PodShare.Container("w0", 50, Optional.of(20_000L)), new PodShare.Container("w1", 50, Optional.of(20_000L))), false);
        String node = book.filter(two, NODES, T0).node().orElseThrow();
        var assign = (PlacementBook.BindPlan.Assign) book.startBinding("t", "ns", "t", node);
        assertThat(assign.gpus().uuids()).hasSize(2).doesNotHaveDuplicates().allMatch(g -> g.startsWith(node + "-"));
    }

    @Test
    void aBindMustNameThePodTheReservationWasMadeForAndAMismatchLeavesItAsItWas() {
        book.filter(pod("v", 40, 1000, Map.of()), NODES, T0);
        String node = book.reservedNode("v").orElseThrow();
        var reserved = book.placement("v").orElseThrow();
        for (String[] forged : new String[][] {{"ns", "attacker"}, {"other", "p-v"}, {"other", "attacker"}}) {
            assertThat(book.startBinding("v", forged[0], forged[1], node)).as(String.join("/", forged))
                    .isInstanceOfSatisfying(PlacementBook.BindPlan.Refuse.class, r -> {
                        assertThat(r.cause()).isEqualTo(PlacementBook.BindPlan.Cause.OTHER_POD);
                        assertThat(r.reason()).isEqualTo("PodNamespace/PodName " + forged[0] + "/" + forged[1]
                                + " is not the pod whose GPUs are reserved under PodUID v; must be ns/p-v");
                    });
        }
        assertThat(book.placement("v")).contains(reserved);
        assertThat(book.bookings()).containsEntry(PlacementBook.Phase.RESERVED, 1L);
        assertThat(book.startBinding("v", "ns", "p-v", node)).isInstanceOf(PlacementBook.BindPlan.Assign.class);
    }

    @Test
    void aSecondBindOfAPodBeingBoundOrBoundIsRefusedAndTakesNothingBack() {
        book.filter(pod("d", 40, 1000, Map.of()), NODES, T0);
        String node = book.reservedNode("d").orElseThrow();
        assertThat(book.startBinding("d", "ns", "p-d", node)).isInstanceOf(PlacementBook.BindPlan.Assign.class);
        assertThat(book.startBinding("d", "ns", "p-d", node)).isInstanceOfSatisfying(PlacementBook.BindPlan.Refuse.class,
                r -> assertThat(r.reason()).isEqualTo("pod ns/p-d is being bound to node " + node + " already"));
        book.bindSucceeded("d");
        assertThat(book.startBinding("d", "ns", "p-d", node)).isInstanceOfSatisfying(PlacementBook.BindPlan.Refuse.class,
                r -> assertThat(r.cause()).isEqualTo(PlacementBook.BindPlan.Cause.BINDING_OR_BOUND));
        assertThat(book.bookings()).containsEntry(PlacementBook.Phase.BOUND, 1L);
        assertThat(book.activeUsage()).extracting(ClusterState.GpuUsage::requestMilli).containsExactly(400);
    }

    @Test
    void aPodSeenBoundOnTheApiServerKeepsItsNameForTheBindCheck() {
        PodShare bound = new PodShare("u1", "team", "svc-1", Optional.of("n1"), false, "f",
                Map.of(DiluNames.ASSIGNED_GPUS, "n1-gpu0"), List.of(new PodShare.Container("c0", 50, Optional.of(1000L))), false);
        book.observe(bound);
        assertThat(book.startBinding("u1", "team", "intruder", "n1")).isInstanceOfSatisfying(
                PlacementBook.BindPlan.Refuse.class, r -> assertThat(r.reason()).endsWith("must be team/svc-1"));
        assertThat(book.placement("u1")).isPresent();
    }

    /** A book of one node with one 40 GB GPU, {@code solo-gpu0}. */
    private static PlacementBook solo() {
        PlacementBook b = new PlacementBook(PlacementParameters.DEFAULTS, 1024, Duration.ofSeconds(30));
        b.putNode("solo", gpus("solo", 1));
        return b;
    }

    /** A pod bound to {@code solo-gpu0}, as the watch shows it, with these parking annotations. */
    private static PodShare onSolo(String uid, int sm, long memory, Map<String, String> parking) {
        Map<String, String> annotations = new HashMap<>(parking);
        annotations.put(DiluNames.ASSIGNED_GPUS, "solo-gpu0");
        return new PodShare(uid, "ns", "p-" + uid, Optional.of("solo"), false, "f-" + uid, annotations,
                List.of(new PodShare.Container("c0", sm, Optional.of(memory))), true);
    }

    private static Map<String, String> parkedAt(Instant t) {
        return Map.of(DiluNames.PARKED, t.toString());
    }

    private static final Map<String, String> WAKE = Map.of(DiluNames.WAKE, T0.toString());

    private static ClusterState.GpuUsage usage(PlacementBook b) {
        return b.activeUsage().stream().filter(u -> u.uuid().equals("solo-gpu0")).findFirst().orElseThrow();
    }

    /** Places {@code pod} on the solo node and binds it, as the scheduler and the watch would. */
    private static void placeAndBind(PlacementBook b, PodShare pod) {
        assertThat(b.filter(pod, List.of("solo"), T0).node()).as("%s placed", pod.uid()).contains("solo");
        b.startBinding(pod.uid(), "ns", pod.name(), "solo");
        b.bindSucceeded(pod.uid());
    }

    @Test
    void aParkedPodIsBookedAtItsMemoryAloneAndItsSmsGoToANewPod() {
        PlacementBook b = solo();
        assertThat(b.observe(onSolo("a", 60, 10_240, Map.of())).kind()).isEqualTo(Standing.Kind.SERVING);
        assertThat(b.filter(pod("n", 60, 10_240, Map.of()), List.of("solo"), T0).node()).as("Σ request 120% > Ω").isEmpty();

        Standing parked = b.observe(onSolo("a", 60, 10_240, parkedAt(T0)));
        assertThat(parked.kind()).isEqualTo(Standing.Kind.PARKED);
        assertThat(usage(b).requestMilli()).as("its SMs given back").isZero();
        assertThat(usage(b).limitMilli()).isZero();
        assertThat(usage(b).memoryMib()).as("its memory kept").isEqualTo(10_240);

        placeAndBind(b, pod("n", 60, 10_240, Map.of()));
        assertThat(usage(b).requestMilli()).isEqualTo(600);
        assertThat(usage(b).memoryMib()).isEqualTo(20_480);
    }

    @Test
    void aWakeTakesItsSmsBackWhereItsGpuHasRoom() {
        PlacementBook b = solo();
        b.observe(onSolo("a", 60, 10_240, parkedAt(T0)));
        Standing woken = b.observe(onSolo("a", 60, 10_240, WAKE));
        assertThat(woken).isEqualTo(new Standing(Standing.Kind.SERVING, Optional.empty(), true));
        assertThat(usage(b).requestMilli()).isEqualTo(600);
        assertThat(usage(b).limitMilli()).isEqualTo(1000);
        assertThat(ParkingAnswer.of(woken, true, false, true, false)).as("condition True, the wake removed")
                .isEqualTo(new ParkingAnswer(true, true, Optional.empty()));
        assertThat(b.observe(onSolo("a", 60, 10_240, WAKE)).wakeDecided())
                .as("the same wake seen again while its answer is written decides nothing").isFalse();
        assertThat(usage(b).requestMilli()).isEqualTo(600);
    }

    @Test
    void aWakeWithoutRoomIsRefusedNamingTheGpuTheSumsAndTheBoundsAndItsMemoryStaysBooked() {
        PlacementBook b = solo();
        b.observe(onSolo("a", 60, 10_240, parkedAt(T0)));
        placeAndBind(b, pod("n", 60, 10_240, Map.of()));

        Standing refused = b.observe(onSolo("a", 60, 10_240, WAKE));
        String reason = "no room to serve again: GPU solo-gpu0 would hold SM request 120% (Ω = 100%), limit 200% "
                + "(γ = 150%), 20480 of 40960 MiB";
        assertThat(refused).isEqualTo(new Standing(Standing.Kind.PARKED, Optional.of(reason), true));
        assertThat(usage(b).requestMilli()).as("the new pod's alone").isEqualTo(600);
        assertThat(usage(b).memoryMib()).isEqualTo(20_480);
        assertThat(ParkingAnswer.of(refused, true, false, true, true)).isEqualTo(new ParkingAnswer(false, false, Optional.of(reason)));

        Standing again = b.observe(onSolo("a", 60, 10_240, WAKE));
        assertThat(again.wakeRefusal()).as("the decision stands until the answer is written").contains(reason);
        assertThat(again.wakeDecided()).isFalse();
        Standing answered = b.observe(onSolo("a", 60, 10_240, Map.of(DiluNames.WAKE_FAILED, reason)));
        assertThat(ParkingAnswer.of(answered, false, true, true, true)).isEqualTo(ParkingAnswer.NOTHING);
        assertThat(usage(b).memoryMib()).isEqualTo(20_480);
    }

    @Test
    void aRestartedBookBooksParkedPodsAtTheirMemoryAndDecidesAWakeLeftUnanswered() {
        PlacementBook b = solo();
        b.observe(onSolo("p", 50, 8_192, parkedAt(T0)));
        b.observe(onSolo("s", 70, 8_192, Map.of()));
        assertThat(usage(b).requestMilli()).isEqualTo(700);
        assertThat(usage(b).memoryMib()).isEqualTo(16_384);
        Standing w = b.observe(onSolo("w", 20, 8_192, WAKE));
        assertThat(w.kind()).as("booked at its memory first, then woken: 20% fits beside 70%")
                .isEqualTo(Standing.Kind.SERVING);
        assertThat(usage(b).requestMilli()).isEqualTo(900);
        assertThat(b.observe(onSolo("x", 20, 8_192, WAKE)).wakeRefusal()).as("a second one does not")
                .hasValueSatisfying(r -> assertThat(r).contains("SM request 110% (Ω = 100%)"));
        assertThat(usage(b).requestMilli()).isEqualTo(900);
    }

    @Test
    void aPlacementEvictsTheFewestLeastRecentlyParkedPodsWhoseMemoryMakesRoomAndOnlyThen() {
        PlacementBook b = solo();
        b.observe(onSolo("old", 10, 15_000, parkedAt(T0)));
        b.observe(onSolo("young", 10, 15_000, parkedAt(T0.plusSeconds(10))));
        b.observe(onSolo("serving", 20, 8_000, Map.of()));

        var f = b.filter(pod("new", 30, 12_000, Map.of()), List.of("solo"), T0.plusSeconds(20));
        assertThat(f.node()).contains("solo");
        assertThat(f.evicted()).singleElement().satisfies(v -> {
            assertThat(v.uid()).isEqualTo("old");
            assertThat(v.name()).isEqualTo("p-old");
            assertThat(v.gpu()).isEqualTo("solo-gpu0");
            assertThat(v.memoryMib()).isEqualTo(15_000);
        });
        assertThat(usage(b).memoryMib()).isEqualTo(15_000 + 8_000 + 12_000);
        assertThat(b.observe(onSolo("old", 10, 15_000, parkedAt(T0)))).as("seen again while it is deleted: not booked")
                .isEqualTo(Standing.NONE);
        assertThat(usage(b).memoryMib()).isEqualTo(35_000);
    }

    @Test
    void aGpuThatOnlyParkedPodsHoldIsHandedBackTheirMemoryFreedAndNotBookedAgain() {
        PlacementBook b = solo();
        b.observe(onSolo("serving", 20, 8_000, Map.of()));
        b.observe(onSolo("p1", 10, 10_000, parkedAt(T0)));
        b.observe(onSolo("p2", 10, 12_000, parkedAt(T0.plusSeconds(5))));
        assertThat(b.handBack()).as("a serving pod holds the GPU: the parked keep their memory there").isEmpty();
        assertThat(usage(b).memoryMib()).isEqualTo(30_000);

        b.forget("serving");
        assertThat(b.handBack()).extracting(PlacementBook.Evicted::uid).containsExactlyInAnyOrder("p1", "p2");
        assertThat(b.activeUsage().stream().filter(u -> u.uuid().equals("solo-gpu0")).mapToLong(ClusterState.GpuUsage::memoryMib)
                .sum()).as("the GPU free").isZero();
        assertThat(b.observe(onSolo("p1", 10, 10_000, parkedAt(T0)))).as("seen again while it is deleted: not booked")
                .isEqualTo(Standing.NONE);
        assertThat(b.handBack()).as("asked again: nothing more").isEmpty();
    }

    @Test
    void aRevisionsLastInstanceKeptInTheRequestPathKeepsItsGpuAndTheParkedBesideIt() {
        PlacementBook b = solo();
        PodShare last = onSolo("last", 10, 10_000, parkedAt(T0));
        b.observe(new PodShare(last.uid(), last.namespace(), last.name(), last.nodeName(), false, last.function(),
                last.annotations(), last.containers(), true, true));
        b.observe(onSolo("p2", 10, 12_000, parkedAt(T0.plusSeconds(5))));
        assertThat(b.handBack()).as("its revision may not reach zero: let go, another would start").isEmpty();
        assertThat(usage(b).memoryMib()).isEqualTo(22_000);

        b.observe(last); // no longer kept: out of the path, or in it where its revision may reach zero
        assertThat(b.handBack()).extracting(PlacementBook.Evicted::uid).containsExactlyInAnyOrder("last", "p2");
    }

    @Test
    void noParkedPodIsEvictedWhereThePlacementWouldStillFail() {
        PlacementBook b = solo();
        b.observe(onSolo("parked", 10, 30_000, parkedAt(T0)));
        b.observe(onSolo("busy", 90, 8_000, Map.of()));
        var f = b.filter(pod("new", 20, 20_000, Map.of()), List.of("solo"), T0);
        assertThat(f.node()).as("Σ request 110%: its memory would not help").isEmpty();
        assertThat(f.evicted()).isEmpty();
        assertThat(usage(b).memoryMib()).isEqualTo(38_000);
        assertThat(b.observe(onSolo("parked", 10, 30_000, parkedAt(T0))).kind()).isEqualTo(Standing.Kind.PARKED);
    }

    @Test
    void onANodeWithGpusOfTwoModelsTheProductThePodSelectsChoosesTheGpu() {
        String v100 = "Tesla V100-SXM2-16GB";
        String a100 = "NVIDIA A100-SXM4-40GB";
        book.putNode("mixed", List.of(new GpuDevice("mixed-v100", 0, v100, 16_384, 80),
                new GpuDevice("mixed-a100", 1, a100, 40_960, 108)));
        List<String> offered = List.of("mixed");
        // Best fit takes the smaller GPU: 0.6 (1 - 0.3) + 0.4 (1 - 8192/16384) = 0.62 < 0.6 (1 - 0.3) + 0.4 (1 - 8192/40960) = 0.74.
        book.filter(pod("any", 30, 8192, Map.of()), offered, T0);
        assertThat(book.placement("any").orElseThrow().slots().getFirst().gpuUuid()).isEqualTo("mixed-v100");

        var selectsA100 = GpuModelChoiceTest.selecting("NVIDIA-A100-SXM4-40GB");
        // Without the selection it would join the active V100 (active GPUs come before a new one).
        assertThat(book.filter(pod("a", 30, 8192, Map.of()), selectsA100, offered, T0).node()).contains("mixed");
        assertThat(book.placement("a").orElseThrow().slots().getFirst().gpuUuid()).isEqualTo("mixed-a100");

        // n0's GPUs are of a model the inventory calls "A100", which GFD would label A100, not NVIDIA-A100-SXM4-40GB.
        var b = book.filter(pod("b", 30, 8192, Map.of()), selectsA100, List.of("n0", "mixed"), T0);
        assertThat(b.node()).contains("mixed");
        assertThat(b.failed().get("n0")).startsWith("none of the node's GPUs is of a product the pod selects");
        assertThat(book.placement("b").orElseThrow().slots().getFirst().gpuUuid()).isEqualTo("mixed-a100");
    }
}
