package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * No policy refuses a request while the cluster has room for it by that policy's own rule: on clusters of several
 * GPU models, some of the same memory and SM count (so that only the model tells their nodes apart), nodes with
 * and without CPU and memory, and requests constrained to some models, asking for CPU and memory, or for no GPU.
 */
class RoomPropertiesTest {

    /** A and B: the same memory and SM count; C: more memory. */
    private static final String[] MODELS = {"A", "B", "C"};

    private static List<NodeInventory> cluster(Random rnd) {
        List<NodeInventory> nodes = new ArrayList<>();
        int count = 1 + rnd.nextInt(10);
        int[] sizes = {1, 2, 2, 4, 8};
        for (int n = 0; n < count; n++) {
            String model = MODELS[rnd.nextInt(MODELS.length)];
            NodeInventory node = NodeInventory.uniform("node" + n, sizes[rnd.nextInt(sizes.length)], model,
                    model.equals("C") ? 24_576 : 16_384, 80);
            // Often the same CPU and memory, so that nodes of A and B look alike but for their model.
            nodes.add(switch (rnd.nextInt(3)) {
                case 0 -> node;
                case 1 -> node.withHost(32_000, 131_072);
                default -> node.withHost(8_000 * (1 + rnd.nextInt(8)), 32_768L * (1 + rnd.nextInt(4)));
            });
        }
        return nodes;
    }

    private static InstanceRequest request(Random rnd, int i) {
        String id = "i" + i;
        String function = "f" + rnd.nextInt(6);
        long cpu = rnd.nextInt(3) == 0 ? 0 : 1_000L * rnd.nextInt(24);
        long memory = rnd.nextInt(3) == 0 ? 0 : 4_096L * rnd.nextInt(24);
        if (rnd.nextInt(8) == 0) {
            return InstanceRequest.cpuOnly(id, function, cpu, memory);
        }
        int gpus = rnd.nextInt(4) == 0 ? 1 << rnd.nextInt(4) : 1;
        int request = rnd.nextInt(4) == 0 ? 1000 : 1 + rnd.nextInt(1000);
        int limit = request + rnd.nextInt(1001 - request);
        Set<String> models = switch (rnd.nextInt(4)) {
            case 0 -> Set.of(MODELS[rnd.nextInt(MODELS.length)]);
            case 1 -> Set.of("A", "C");
            default -> Set.of();
        };
        return new InstanceRequest(id, function, gpus, request, limit, 1 + rnd.nextInt(20_000), false, models, cpu,
                memory);
    }

    @Property(tries = 400)
    void noRequestIsRefusedWhileAGpuItMayUseHasRoomForIt(@ForAll long seed, @ForAll("policies") String name) {
        Random rnd = new Random(seed);
        List<NodeInventory> nodes = cluster(rnd);
        List<InstanceRequest> arrivals = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            arrivals.add(request(rnd, i));
        }
        PlacementPolicy policy = policy(name, arrivals);
        ClusterState state = new ClusterState(nodes);
        List<String> placed = new ArrayList<>();
        for (InstanceRequest r : arrivals) {
            PlacementDecision d = policy.decide(state, r);
            if (d instanceof PlacementDecision.Placed p) {
                state.apply(r, p);
                placed.add(r.id());
            } else {
                assertThat(room(name, state, r)).as("%s refused %s (%s) while a GPU has room for it",
                        name, r, ((PlacementDecision.Infeasible) d).reason()).isNull();
            }
            if (rnd.nextInt(5) == 0 && !placed.isEmpty()) {
                assertThat(state.release(placed.remove(rnd.nextInt(placed.size())))).isTrue();
            }
        }
    }

    /** Two-GPU nodes of two models of equal memory and SM count: a pod of the second model finds its idle GPUs. */
    @Test
    void aPodOfOneModelIsNotRefusedWhenTheFirstEmptyNodeOfItsShapeIsOfTheOther() {
        List<NodeInventory> nodes = List.of(NodeInventory.uniform("p100", 2, "P100", 16_384, 80),
                NodeInventory.uniform("t4", 2, "T4", 16_384, 80));
        InstanceRequest t4Only = new InstanceRequest("pod", "pod", 1, 500, 500, 8_192, false, Set.of("T4"));
        InstanceRequest t4Pair = new InstanceRequest("pair", "pair", 2, 1000, 1000, 8_192, false, Set.of("T4"));
        for (PlacementPolicy policy : List.of(new ComplementaryPlacement(), new ExclusivePlacement(),
                new StaticQuotaPlacement(), StaticQuotaPlacement.atRequest(PlacementParameters.DEFAULTS),
                new BestFitPlacement(), new NodeBestFitPlacement(),
                new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(List.of(t4Only), 1)))) {
            ClusterState state = new ClusterState(nodes);
            assertThat(policy.decide(state, t4Only)).as(policy.name()).isInstanceOfSatisfying(PlacementDecision.Placed.class,
                    p -> assertThat(p.node()).isEqualTo("t4"));
            assertThat(policy.decide(state, t4Pair)).as(policy.name()).isInstanceOfSatisfying(PlacementDecision.Placed.class,
                    p -> assertThat(p.node()).isEqualTo("t4"));
        }
    }

    /** Two nodes alike but for their CPU: a pod that needs the larger one's CPU is not refused. */
    @Test
    void aPodIsNotRefusedWhenTheFirstEmptyNodeOfItsGpuShapeLacksItsCpu() {
        List<NodeInventory> nodes = List.of(NodeInventory.uniform("small", 2, "T4", 16_384, 80).withHost(8_000, 65_536),
                NodeInventory.uniform("large", 2, "T4", 16_384, 80).withHost(64_000, 65_536));
        InstanceRequest hungry = new InstanceRequest("pod", "pod", 1, 500, 500, 8_192, false, Set.of(), 16_000, 1_024);
        InstanceRequest cpuOnly = InstanceRequest.cpuOnly("cpu", "cpu", 16_000, 1_024);
        for (PlacementPolicy policy : List.of(new ComplementaryPlacement(), new ExclusivePlacement(), new StaticQuotaPlacement(),
                new BestFitPlacement(), new NodeBestFitPlacement(),
                new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(List.of(hungry), 1)))) {
            ClusterState state = new ClusterState(nodes);
            for (InstanceRequest r : List.of(hungry, cpuOnly)) {
                assertThat(policy.decide(state, r)).as(policy.name() + " " + r.id())
                        .isInstanceOfSatisfying(PlacementDecision.Placed.class, p -> assertThat(p.node()).isEqualTo("large"));
            }
        }
    }

    @Provide
    Arbitrary<String> policies() {
        return Arbitraries.of("dilu", "static-limit", "static-request", "exclusive", "bestfit", "bestfit-node",
                "bestfit-node-simulator", "fgd", "fgd-simulator");
    }

    private static PlacementPolicy policy(String name, List<InstanceRequest> arrivals) {
        return switch (name) {
            case "dilu" -> new ComplementaryPlacement();
            case "static-limit" -> new StaticQuotaPlacement();
            case "static-request" -> StaticQuotaPlacement.atRequest(PlacementParameters.DEFAULTS);
            case "exclusive" -> new ExclusivePlacement();
            case "bestfit" -> new BestFitPlacement();
            case "bestfit-node" -> new NodeBestFitPlacement();
            case "bestfit-node-simulator" -> new NodeBestFitPlacement(FragmentationGradientPlacement.Scoring.SIMULATOR);
            case "fgd" -> new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(arrivals, 0.95));
            case "fgd-simulator" -> new FragmentationGradientPlacement(FragmentationGradientPlacement.workloadOf(arrivals, 0.95),
                    FragmentationGradientPlacement.Scoring.SIMULATOR);
            default -> throw new IllegalArgumentException(name);
        };
    }

    /**
     * A node with room for {@code r} by the named policy's own feasibility rule, or null when there is none: the
     * GPUs it may use (model, memory, SM share as the policy counts it) on one node with its CPU and memory free.
     */
    private static String room(String policy, ClusterState state, InstanceRequest r) {
        for (int n = 0; n < state.nodeCount(); n++) {
            if (!state.hostFits(n, r)) {
                continue;
            }
            int fitting = 0;
            for (int g = state.firstGpu(n); g < state.endGpu(n); g++) {
                if (r.runsOn(state.gpu(g)) && state.freeMemory(g) >= r.memoryMib() && hasRoom(policy, state, g, r)) {
                    fitting++;
                }
            }
            if (fitting >= r.gpus()) {
                return state.nodeName(n);
            }
        }
        return null;
    }

    private static boolean hasRoom(String policy, ClusterState state, int g, InstanceRequest r) {
        PlacementParameters p = PlacementParameters.DEFAULTS;
        int share = policy.equals("static-request") ? r.requestMilli() : r.limitMilli();
        return switch (policy) {
            // Ω on requests, γ on limits, and the function's own limits within the GPU
            case "dilu" -> state.requestSum(g) + r.requestMilli() <= p.omegaMilli()
                    && state.limitSum(g) + r.limitMilli() <= p.gammaMilli()
                    && state.functionLimitSum(g, state.knownFunctionId(r.function())) + r.limitMilli()
                            <= InstanceRequest.ONE_GPU_MILLI;
            // one fixed share per instance, booked as request and limit alike, within Ω
            case "static-limit", "static-request" -> state.requestSum(g) + share <= p.omegaMilli()
                    && state.limitSum(g) + share <= p.omegaMilli();
            // a whole idle GPU
            case "exclusive" -> !state.isActive(g);
            // the SM share not yet requested
            default -> 1000 - state.requestSum(g) >= r.requestMilli();
        };
    }
}
