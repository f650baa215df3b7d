package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** Whatever arrives, no GPU is ever booked past Ω, γ or its memory, and nothing throws. */
class PlacementPropertiesTest {

    private static List<NodeInventory> heterogeneousCluster(Random rnd, int nodes) {
        List<NodeInventory> inventory = new ArrayList<>();
        long[] memories = {16_384, 24_576, 40_960, 81_920};
        for (int n = 0; n < nodes; n++) {
            long mem = memories[rnd.nextInt(memories.length)];
            inventory.add(NodeInventory.uniform("node" + n, 1 + rnd.nextInt(8), "gpu-" + mem, mem, 108));
        }
        return inventory;
    }

    private static InstanceRequest randomRequest(Random rnd, int i) {
        int request = 1 + rnd.nextInt(1000);
        int limit = request + rnd.nextInt(1001 - request);
        return new InstanceRequest("i" + i, "f" + rnd.nextInt(12), 1 + (rnd.nextInt(5) == 0 ? rnd.nextInt(8) : 0),
                request, limit, 1 + rnd.nextInt(90_000), rnd.nextBoolean());
    }

    @Property(tries = 200)
    void neverBreaksOmegaGammaOrMemory(
            @ForAll long seed,
            @ForAll @IntRange(min = 1000, max = 1500) int omega,
            @ForAll @IntRange(min = 0, max = 1000) int gammaExtra,
            @ForAll("policies") String policyName) {
        Random rnd = new Random(seed);
        PlacementParameters params = new PlacementParameters(omega, omega + gammaExtra, 0.6, 0.4, 1.0, 4, 1024);
        PlacementPolicy policy = switch (policyName) {
            case "dilu" -> new ComplementaryPlacement(params);
            case "static" -> new StaticQuotaPlacement(params);
            default -> new ExclusivePlacement();
        };
        ClusterState state = new ClusterState(heterogeneousCluster(rnd, 1 + rnd.nextInt(12)));
        List<String> placed = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            InstanceRequest r = randomRequest(rnd, i);
            PlacementDecision d = policy.decide(state, r);
            if (d instanceof PlacementDecision.Placed p) {
                assertThat(p.slots().size()).isGreaterThanOrEqualTo(r.gpus());
                assertThat(p.slots()).extracting(Slot::gpuUuid).doesNotHaveDuplicates()
                        .allMatch(uuid -> uuid.startsWith(p.node() + "-"));
                if (p.slots().size() > r.gpus()) { // pipeline stages share the model's memory
                    assertThat(r.splittable()).isTrue();
                    assertThat(p.slots().stream().mapToLong(Slot::memoryMib).sum()).isEqualTo(r.memoryMib());
                } else {
                    assertThat(p.slots()).hasSize(r.gpus()).allMatch(s -> s.memoryMib() == r.memoryMib());
                }
                state.apply(r.id(), r.function(), p);
                placed.add(r.id());
            } else {
                assertThat(((PlacementDecision.Infeasible) d).reason()).isNotBlank();
            }
            if (rnd.nextInt(4) == 0 && !placed.isEmpty()) {
                assertThat(state.release(placed.remove(rnd.nextInt(placed.size())))).isTrue();
            }
        }
        int omegaCap = policy instanceof ExclusivePlacement ? 1000 : omega;
        int gammaCap = policy instanceof ExclusivePlacement ? 1000 : omega + gammaExtra;
        for (ClusterState.GpuUsage u : state.activeUsage()) {
            assertThat(u.requestMilli()).as("Σrequest on %s", u.uuid()).isLessThanOrEqualTo(omegaCap);
            assertThat(u.limitMilli()).as("Σlimit on %s", u.uuid()).isLessThanOrEqualTo(gammaCap);
            assertThat(u.memoryMib()).as("Σmemory on %s", u.uuid()).isLessThanOrEqualTo(u.capacityMib());
        }
        placed.forEach(state::release);
        assertThat(state.activeGpuCount()).isZero();
    }

    /** Restricted to some nodes (a scheduler's candidates), Algorithm 1 stays on them and otherwise decides alike. */
    @Property(tries = 100)
    void aDecisionAmongSomeNodesStaysOnThemAndAgreesWhenTheBestIsAmongThem(@ForAll long seed) {
        Random rnd = new Random(seed);
        List<NodeInventory> nodes = heterogeneousCluster(rnd, 2 + rnd.nextInt(12));
        ClusterState state = new ClusterState(nodes);
        ComplementaryPlacement dilu = new ComplementaryPlacement();
        for (int i = 0; i < 200; i++) {
            InstanceRequest r = randomRequest(rnd, i);
            List<String> allowed = nodes.stream().map(NodeInventory::name).filter(n -> rnd.nextInt(3) > 0).toList();
            PlacementDecision global = dilu.decide(state, r);
            PlacementDecision restricted = dilu.decide(state, r, allowed);
            if (restricted instanceof PlacementDecision.Placed p) {
                assertThat(allowed).contains(p.node());
            }
            if (global instanceof PlacementDecision.Placed g && allowed.contains(g.node()) && !r.splittable()) {
                assertThat(restricted).isEqualTo(global);
            }
            if (global instanceof PlacementDecision.Placed g) {
                state.apply(r.id(), r.function(), g);
            }
        }
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<String> policies() {
        return net.jqwik.api.Arbitraries.of("dilu", "static", "exclusive");
    }
}
