package io.dilu.core.tokens;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class TokenControllerTest {

    private static final TokenParameters P = TokenParameters.DEFAULTS.withMaxTokens(10_000);
    private final TokenController controller = new TokenController(P);
    private Instant now = Instant.parse("2026-01-01T00:00:00Z");

    private static InstanceSample slo(long blocks, double klc) {
        return new InstanceSample("inf", true, 0.3, 0.6, blocks, klc);
    }

    private static InstanceSample train(long blocks) {
        return new InstanceSample("train", false, 0.4, 1.0, blocks, Double.NaN);
    }

    private TokenPlan period(InstanceSample... samples) {
        now = now.plus(P.period());
        return controller.issue(now, List.of(samples));
    }

    @Test
    void withoutAnSloNeighbourBestEffortRunsAtItsLimit() {
        TokenPlan plan = period(train(500));
        assertThat(plan.state()).isEqualTo(ControllerState.NONE);
        assertThat(plan.tokensOf("train")).isEqualTo(10_000);
    }

    @Test
    void aStretchedLaunchCycleIsAnEmergency() {
        TokenPlan first = period(slo(100, 10), train(500)); // Tmin = 10 ms
        assertThat(first.tokensOf("inf")).as("starts at its request and grows by η_increase").isEqualTo(3_900);
        assertThat(first.tokensOf("train")).as("a best-effort neighbour holds its request").isEqualTo(4_000);
        TokenPlan calm = period(slo(100, 12), train(500));
        assertThat(calm.state()).isEqualTo(ControllerState.CONTENTION);
        assertThat(calm.tokensOf("inf")).isEqualTo(5_070); // 3000 × 1.3², on its way to the limit
        assertThat(period(slo(100, 12), train(500)).tokensOf("inf")).as("capped at the limit").isEqualTo(6_000);
        long trainBefore = calm.tokensOf("train");

        TokenPlan hot = period(slo(100, 30), train(500)); // ΔT = 2.0 > 1.6
        assertThat(hot.state()).isEqualTo(ControllerState.EMERGENCY);
        assertThat(hot.tokensOf("inf")).isEqualTo(6_000);
        assertThat(hot.tokensOf("train")).isEqualTo((long) (Math.min(4_000, trainBefore) / 2.0));

        // No new cycle completed: the 30 ms one still counts, the emergency holds and keeps shrinking.
        TokenPlan still = period(slo(100, Double.NaN), train(500));
        assertThat(still.state()).isEqualTo(ControllerState.EMERGENCY);
        assertThat(still.tokensOf("train")).isLessThan(hot.tokensOf("train"));

        // Shrinking stops at the floor.
        TokenPlan last = null;
        for (int i = 0; i < 50; i++) {
            last = period(slo(100, Double.NaN), train(500));
        }
        assertThat(last.tokensOf("train")).isEqualTo((long) (4_000 * P.floor()));

        TokenPlan over = period(slo(100, 11), train(500)); // back within η
        assertThat(over.state()).isEqualTo(ControllerState.CONTENTION);
        assertThat(over.tokensOf("train")).as("contention regrows a shrunk share towards its request")
                .isEqualTo((long) Math.floor(last.tokensOf("train") * 1.3));
        for (int i = 0; i < 30; i++) {
            over = period(slo(100, 11), train(500));
        }
        assertThat(over.tokensOf("train")).as("but not past the request while contended").isEqualTo(4_000);
    }

    @Test
    void anIdleSloInstanceFallsBackToItsRequestAndBestEffortRecovers() {
        period(slo(100, 10), train(500));
        period(slo(100, 40), train(500)); // emergency: train shrinks
        long shrunk = period(slo(100, Double.NaN), train(500)).tokensOf("train");
        TokenPlan plan = period(slo(0, Double.NaN), train(500));
        assertThat(plan.state()).as("launched nothing: no longer stretched").isEqualTo(ControllerState.CONTENTION);
        assertThat(plan.tokensOf("train")).isEqualTo((long) Math.floor(shrunk * 1.3));
        for (int i = 1; i < P.rateWindow(); i++) { // the launch window empties
            plan = period(slo(0, Double.NaN), train(500));
        }
        assertThat(plan.state()).isEqualTo(ControllerState.RECOVERY);
        assertThat(plan.tokensOf("inf")).isEqualTo(3_000);
        assertThat(plan.tokensOf("train")).isGreaterThan(shrunk);
        long before = plan.tokensOf("train");
        TokenPlan next = period(slo(0, Double.NaN), train(500));
        assertThat(next.tokensOf("train")).isEqualTo(Math.min(10_000, (long) Math.floor(before * 1.3 + 1e-6))
                ).as("grows by η_increase up to the limit");
        for (int i = 0; i < 30; i++) {
            next = period(slo(0, Double.NaN), train(500));
        }
        assertThat(next.tokensOf("train")).isEqualTo(10_000);
    }

    @Test
    void anSloInstanceAloneInLaunchingGrowsTowardsItsLimit() {
        TokenPlan plan = period(slo(100, 10), train(0));
        for (int i = 0; i < P.rateWindow() + 10; i++) {
            plan = period(slo(100, 10), train(0));
        }
        assertThat(plan.state()).isEqualTo(ControllerState.RECOVERY);
        assertThat(plan.tokensOf("inf")).isEqualTo(6_000);
    }

    @Test
    void departedInstancesAreForgotten() {
        period(slo(100, 10), train(500));
        TokenPlan plan = period(train(500));
        assertThat(plan.grants()).extracting(TokenGrant::id).containsExactly("train");
        assertThat(plan.state()).isEqualTo(ControllerState.NONE);
    }

    @Test
    void theSmallestCycleIsForgottenAfterKlcMemory() {
        TokenController c = new TokenController(new TokenParameters(
                10_000, 1.6, 1.3, Duration.ofMillis(5), 20, 0.05, Duration.ofSeconds(1)));
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        c.issue(t, List.of(slo(100, 5), train(500)));
        // The workload changed for good: 20 ms cycles. For up to two memory intervals it looks like an emergency...
        assertThat(c.issue(t.plusMillis(5), List.of(slo(100, 20), train(500))).state()).isEqualTo(ControllerState.EMERGENCY);
        c.issue(t.plusMillis(1000), List.of(slo(100, 20), train(500)));
        c.issue(t.plusMillis(2000), List.of(slo(100, 20), train(500)));
        // ...then 20 ms is the new normal.
        assertThat(c.issue(t.plusMillis(2005), List.of(slo(100, 20), train(500))).state())
                .isEqualTo(ControllerState.CONTENTION);
    }

    @Property(tries = 300)
    void grantsStayWithinZeroAndMaxTokensTimesLimit(@ForAll long seed) {
        Random rnd = new Random(seed);
        TokenController c = new TokenController(P);
        int count = 1 + rnd.nextInt(16);
        List<double[]> quotas = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            double request = 0.01 + rnd.nextDouble() * 0.99;
            quotas.add(new double[] {request, request + rnd.nextDouble() * (1 - request), rnd.nextBoolean() ? 1 : 0});
        }
        Instant t = Instant.EPOCH;
        for (int period = 0; period < 400; period++) {
            t = t.plusMillis(5);
            List<InstanceSample> samples = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                double[] q = quotas.get(i);
                long blocks = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(20_000);
                double klc = rnd.nextInt(4) == 0 ? 1 + rnd.nextDouble() * 100 : Double.NaN;
                samples.add(new InstanceSample("i" + i, q[2] == 1, q[0], q[1], blocks, klc));
            }
            TokenPlan plan = c.issue(t, samples);
            for (int i = 0; i < count; i++) {
                long tokens = plan.grants().get(i).tokens();
                assertThat(tokens).isBetween(0L, (long) Math.floor(P.maxTokens() * quotas.get(i)[1]));
            }
        }
    }
}
