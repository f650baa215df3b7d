package io.dilu.core.tokens;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

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

    /** An SLO instance whose limit is the whole GPU: nothing is left to its neighbour but what it tolerates. */
    private static InstanceSample slo(long blocks, double klc) {
        return new InstanceSample("inf", true, 0.3, 1.0, blocks, klc);
    }

    private static InstanceSample train(long blocks) {
        return new InstanceSample("train", false, 0.4, 1.0, blocks, Double.NaN);
    }

    private TokenPlan period(InstanceSample... samples) {
        now = now.plus(P.period());
        return controller.issue(now, List.of(samples));
    }

    /** The same periods {@code times} over: the plan of the last. */
    private TokenPlan periods(int times, InstanceSample... samples) {
        TokenPlan plan = null;
        for (int i = 0; i < times; i++) {
            plan = period(samples);
        }
        return plan;
    }

    /** Cycles enough, after one calm cycle, to be the median of the latest ones: the instance's current KLC. */
    private static final int MOST = 2;

    @Test
    void theCycleReferenceIsTheSmallestTheInstanceShowed() {
        assertThat(controller.klcReferenceMillis("inf")).as("before any period").isNaN();
        period(slo(100, 12), train(500));
        period(slo(100, 8), train(500));
        period(slo(100, 30), train(500));
        assertThat(controller.klcReferenceMillis("inf")).isEqualTo(8);
        assertThat(controller.klcReferenceMillis("train")).as("no cycle reported").isNaN();
        assertThat(controller.klcReferenceMillis("gone")).isNaN();
    }

    @Test
    void bestEffortYieldsToABusySloNeighbourOnly() {
        TokenPlan alone = period(train(500));
        assertThat(alone.grants()).singleElement().extracting(TokenGrant::yields).isEqualTo(false);
        TokenPlan beside = period(slo(100, 10), train(500));
        assertThat(beside.grants()).filteredOn(g -> g.id().equals("train")).singleElement()
                .extracting(TokenGrant::yields).isEqualTo(true);
        assertThat(beside.grants()).filteredOn(g -> g.id().equals("inf")).singleElement()
                .extracting(TokenGrant::yields).as("an SLO instance waits for nobody").isEqualTo(false);
        TokenPlan idle = periods(P.rateWindow(), slo(0, Double.NaN), train(500));
        assertThat(idle.grants()).filteredOn(g -> g.id().equals("train")).singleElement()
                .extracting(TokenGrant::yields).as("beside an idle SLO neighbour").isEqualTo(false);
    }

    @Test
    void aNeighbourWhoseCyclesNeverEndCannotHoldBestEffortBelowHalfItsRequest() {
        // Best-effort's request is 4,000 tokens a period; held at every launch, it launches 500.
        TokenPlan plan = periods(TokenController.GUARANTEE_PERIODS, slo(100, 10), train(500));
        assertThat(plan.grants()).filteredOn(g -> g.id().equals("train")).singleElement()
                .extracting(TokenGrant::yields).as("below half its request over the window: it runs on tokens alone")
                .isEqualTo(false);
        plan = periods(TokenController.GUARANTEE_PERIODS, slo(100, 10), train(3_000));
        assertThat(plan.grants()).filteredOn(g -> g.id().equals("train")).singleElement()
                .extracting(TokenGrant::yields).as("launching three quarters of it again").isEqualTo(true);
    }

    @Test
    void twoBusyBestEffortInstancesBothYieldSoTheirCyclesRunInTheOrderTheyBegan() {
        InstanceSample a = new InstanceSample("a", false, 0.4, 0.7, 2_000, Double.NaN);
        InstanceSample b = new InstanceSample("b", false, 0.4, 0.7, 2_000, Double.NaN);
        assertThat(periods(P.rateWindow(), a, b).grants()).extracting(TokenGrant::yields).containsOnly(true);
        TokenPlan oneIdle = periods(P.rateWindow(), a, new InstanceSample("b", false, 0.4, 0.7, 0, Double.NaN));
        assertThat(oneIdle.grants()).filteredOn(g -> g.id().equals("a")).singleElement()
                .extracting(TokenGrant::yields).as("beside an idle neighbour").isEqualTo(false);
        assertThat(oneIdle.grants()).filteredOn(g -> g.id().equals("b")).singleElement()
                .extracting(TokenGrant::yields).as("idle beside a busy one: its first launch waits its turn").isEqualTo(true);
    }

    @Test
    void anSloInstanceYieldsToAnotherWhileItBorrowsBeyondItsRequestUnlessItsCyclesAreStretched() {
        // Two SLO instances of 30% each (limits 100%): 300 tokens a period of 10,000 is 3%, 5,000 is 50%. Cycles of
        // 10 ms; then the borrower's stretch to 40 ms (4× > 1.6).
        InstanceSample steady = new InstanceSample("steady", true, 0.3, 1.0, 300, 10);
        InstanceSample within = new InstanceSample("bursty", true, 0.3, 1.0, 300, 10);
        InstanceSample borrowing = new InstanceSample("bursty", true, 0.3, 1.0, 5_000, 10);
        assertThat(periods(P.rateWindow(), steady, within).grants()).extracting(TokenGrant::yields).containsOnly(false);
        TokenPlan burst = periods(P.rateWindow(), steady, borrowing);
        assertThat(burst.grants()).filteredOn(g -> g.id().equals("bursty")).singleElement()
                .extracting(TokenGrant::yields).as("beyond its request, beside a busy SLO neighbour").isEqualTo(true);
        assertThat(burst.grants()).filteredOn(g -> g.id().equals("steady")).singleElement()
                .extracting(TokenGrant::yields).as("within its request").isEqualTo(false);
        TokenPlan stretched = periods(TokenController.CURRENT_CYCLES, steady,
                new InstanceSample("bursty", true, 0.3, 1.0, 5_000, 40));
        assertThat(stretched.grants()).filteredOn(g -> g.id().equals("bursty")).singleElement()
                .extracting(TokenGrant::yields).as("stretched past its threshold: it launches at once").isEqualTo(false);
        TokenPlan alone = periods(P.rateWindow(), new InstanceSample("steady", true, 0.3, 1.0, 0, Double.NaN), borrowing);
        assertThat(alone.grants()).filteredOn(g -> g.id().equals("bursty")).singleElement()
                .extracting(TokenGrant::yields).as("beside an idle neighbour").isEqualTo(false);
    }

    @Test
    void withoutAnSloNeighbourBestEffortRunsAtItsLimit() {
        TokenPlan plan = period(train(500));
        assertThat(plan.state()).isEqualTo(ControllerState.NONE);
        assertThat(plan.tokensOf("train")).isEqualTo(10_000);
    }

    @Test
    void anSloInstanceRunsUpToItsLimitWhateverItsNeighboursDo() {
        for (long blocks : new long[] {0, 100, 0, 100}) {
            assertThat(period(slo(blocks, 10), train(500)).tokensOf("inf")).isEqualTo(10_000);
        }
        assertThat(period(slo(100, 40), train(500)).tokensOf("inf")).as("in an emergency too").isEqualTo(10_000);
    }

    @Test
    void bestEffortKeepsWhatTheBusySloLimitsLeaveHoweverStretchedTheirCycles() {
        // Two busy SLO instances whose limits add up to 70%: the two best-effort ones share 30% by their requests.
        List<InstanceSample> calm = List.of(new InstanceSample("a", true, 0.2, 0.4, 100, 10),
                new InstanceSample("b", true, 0.1, 0.3, 100, 10), new InstanceSample("t1", false, 0.4, 0.8, 500, Double.NaN),
                new InstanceSample("t2", false, 0.2, 0.4, 500, Double.NaN));
        List<InstanceSample> stretched = List.of(new InstanceSample("a", true, 0.2, 0.4, 100, 40),
                new InstanceSample("b", true, 0.1, 0.3, 100, 40), calm.get(2), calm.get(3));
        controller.issue(now, calm);
        TokenPlan plan = null;
        for (int i = 0; i < 100; i++) {
            now = now.plus(P.period());
            plan = controller.issue(now, stretched);
        }
        assertThat(plan.state()).isEqualTo(ControllerState.EMERGENCY);
        assertThat(plan.tokensOf("a") + plan.tokensOf("b")).as("the SLO instances at their limits").isEqualTo(7_000);
        assertThat(plan.tokensOf("t1")).as("two thirds of the 30% left").isCloseTo(2_000, within(1L));
        assertThat(plan.tokensOf("t2")).as("one third of it").isCloseTo(1_000, within(1L));

        // Once "b" idles (its launch window empties), its limit's room is best-effort's too.
        List<InstanceSample> bIdle = List.of(stretched.get(0), new InstanceSample("b", true, 0.1, 0.3, 0, Double.NaN),
                calm.get(2), calm.get(3));
        for (int i = 0; i < P.rateWindow(); i++) {
            now = now.plus(P.period());
            plan = controller.issue(now, bIdle);
        }
        assertThat(plan.tokensOf("t1")).as("two thirds of the 60% left, within its 80% limit").isCloseTo(4_000, within(1L));
        assertThat(plan.tokensOf("t2")).isCloseTo(2_000, within(1L));
    }

    @Test
    void anEmergencyShrinksTheNeighbourOncePerStretchedCycle() {
        TokenPlan calm = period(slo(100, 10), train(500)); // Tmin = 10 ms
        assertThat(calm.state()).isEqualTo(ControllerState.CONTENTION);
        assertThat(calm.tokensOf("train")).as("the request to begin with, grown after one healthy cycle")
                .isEqualTo(5_200);

        TokenPlan once = period(slo(100, 20), train(500)); // T/Tmin = 2.0 > 1.6, but once
        assertThat(once.state()).as("one stretched cycle among calm ones is not contention").isNotEqualTo(ControllerState.EMERGENCY);
        TokenPlan hot = period(slo(100, 20), train(500)); // the median of the latest cycles: 20 ms
        assertThat(hot.state()).isEqualTo(ControllerState.EMERGENCY);
        assertThat(hot.tokensOf("train")).as("no more than the request, halved").isEqualTo(2_000);

        // No new cycle completed: the 20 ms one still counts, the emergency holds, and so does the shrunk share:
        // the same evidence does not shrink it again 5 ms later.
        TokenPlan still = period(slo(100, Double.NaN), train(500));
        assertThat(still.state()).isEqualTo(ControllerState.EMERGENCY);
        assertThat(still.tokensOf("train")).isEqualTo(2_000);
        assertThat(period(slo(100, 20), train(500)).tokensOf("train")).as("the next stretched cycle: once more")
                .isEqualTo(1_000);

        TokenPlan last = null;
        for (int i = 0; i < 50; i++) {
            last = period(slo(100, 20), train(500));
        }
        assertThat(last.tokensOf("train")).as("never below the floor").isEqualTo((long) (4_000 * P.floor()));
    }

    @Test
    void healthyCyclesGrowTheToleratedShareBackAndMiddlingOnesHoldIt() {
        period(slo(100, 10), train(500));
        assertThat(periods(MOST, slo(100, 20), train(500)).tokensOf("train")).isEqualTo(2_000);
        TokenPlan middling = periods(TokenController.CURRENT_CYCLES, slo(100, 14), train(500)); // 1.4: neither healthy nor an emergency
        assertThat(middling.state()).isEqualTo(ControllerState.CONTENTION);
        long held = middling.tokensOf("train");
        assertThat(held).as("shrunk while the stretched cycles were the median, then held").isLessThanOrEqualTo(2_000);
        assertThat(period(slo(100, Double.NaN), train(500)).tokensOf("train")).as("no new cycle: hold").isEqualTo(held);
        assertThat(periods(TokenController.CURRENT_CYCLES, slo(100, 11.5), train(500)).tokensOf("train"))
                .as("1.15: a fifth of the best is not healthy").isEqualTo(held);
        periods(TokenController.CURRENT_CYCLES / 2, slo(100, 10.5), train(500));
        assertThat(period(slo(100, 10.5), train(500)).tokensOf("train")).as("healthy cycles (1.05) are the median")
                .isCloseTo((long) (held * P.etaIncrease()), within(1L));
        TokenPlan grown = null;
        for (int i = 0; i < 30; i++) {
            grown = period(slo(100, 10.5), train(500));
        }
        assertThat(grown.tokensOf("train")).as("up to the limit").isEqualTo(10_000);
    }

    @Test
    void anIdleSloNeighbourLetsBestEffortGrowAndItsReturnBringsBackWhatItTolerated() {
        period(slo(100, 10), train(500));
        TokenPlan hot = period(slo(100, 40), train(500)); // the median of [10, 40] is 2.5 × Tmin: an emergency
        assertThat(hot.state()).isEqualTo(ControllerState.EMERGENCY);
        long tolerated = hot.tokensOf("train");
        assertThat(tolerated).as("the request divided by the ratio").isEqualTo(1_600);
        TokenPlan plan = null;
        for (int i = 0; i < P.rateWindow(); i++) { // the SLO instance's launch window empties
            plan = period(slo(0, Double.NaN), train(500));
        }
        assertThat(plan.state()).isEqualTo(ControllerState.RECOVERY);
        long first = plan.tokensOf("train");
        assertThat(first).as("grows by η_increase from what it had").isEqualTo((long) (tolerated * P.etaIncrease()));
        for (int i = 0; i < 20; i++) {
            plan = period(slo(0, Double.NaN), train(500));
        }
        assertThat(plan.tokensOf("train")).as("up to its limit while the neighbour idles").isEqualTo(10_000);
        TokenPlan back = period(slo(100, Double.NaN), train(500));
        assertThat(back.state()).isEqualTo(ControllerState.CONTENTION);
        assertThat(back.tokensOf("train")).as("the busy neighbour gets back the share it tolerated").isEqualTo(tolerated);
    }

    @Test
    void aNeighbourReportingEmergenciesWithoutEndCannotStarveBestEffort() {
        period(slo(100, 10), train(500));
        long sum = 0;
        int periods = 4_000; // 20 s of stretched cycles, every one of them reported
        for (int i = 0; i < periods; i++) {
            sum += period(slo(100, 40), train(500)).tokensOf("train");
        }
        assertThat((double) sum / periods).as("best-effort's average grant against a lying neighbour")
                .isGreaterThanOrEqualTo(0.5 * 4_000 - 200);
    }

    /** A parked SLO instance (request 30%, limit 60%): kept warm, its SM request given back. */
    private static InstanceSample parked(String id, long blocks, double klc) {
        return new InstanceSample(id, true, 0.3, 0.6, blocks, klc, Double.NaN, true);
    }

    @Test
    void aParkedInstanceOnAnIdleGpuRunsAtItsLimitAtOnce() {
        assertThat(period(parked("p", 0, Double.NaN)).tokensOf("p")).as("alone").isEqualTo(6_000);
        assertThat(period(parked("p", 500, 10), train(0)).tokensOf("p")).as("beside an idle booked neighbour")
                .isEqualTo(6_000);
    }

    @Test
    void aParkedInstanceGetsOnlyWhatTheBookedOnesLeftOverTheRateWindowAndNoGuarantee() {
        // The booked neighbour launches 7,000 blocks a period: 3,000 are left, and a parked instance takes them
        // once the window is full of its launches, however long it has had nothing.
        TokenPlan plan = null;
        for (int i = 0; i < 4_000; i++) {
            plan = period(parked("p", 0, Double.NaN), train(7_000));
        }
        assertThat(plan.tokensOf("p")).isEqualTo(3_000);
        // A neighbour at its limit leaves nothing: the parked instance waits, with no request held for it.
        for (int i = 0; i < P.rateWindow(); i++) {
            plan = period(parked("p", 0, Double.NaN), train(10_000));
        }
        assertThat(plan.tokensOf("p")).as("no floor, no request, no average guarantee").isZero();
        assertThat(plan.tokensOf("train")).as("the booked neighbour keeps the GPU").isEqualTo(10_000);
    }

    @Test
    void parkedInstancesShareWhatIsLeftByTheirLimits() {
        InstanceSample wide = new InstanceSample("wide", false, 0.2, 0.8, 0, Double.NaN, Double.NaN, true);
        TokenPlan plan = null;
        for (int i = 0; i < P.rateWindow(); i++) {
            plan = period(parked("p", 0, Double.NaN), wide, train(4_000));
        }
        assertThat(plan.tokensOf("p")).as("60 / 140 of the 6,000 left").isEqualTo(2_571);
        assertThat(plan.tokensOf("wide")).as("80 / 140 of them").isEqualTo(3_428);
    }

    @Test
    void aParkedSloInstanceIsNeverAnEmergencyNorItsNeighboursContention() {
        period(parked("p", 100, 10), train(500));
        TokenPlan plan = period(parked("p", 100, 40), train(500));
        assertThat(plan.state()).as("its stretched cycles protect nothing: it is promised nothing")
                .isEqualTo(ControllerState.NONE);
        assertThat(plan.tokensOf("train")).as("the best-effort neighbour runs at its limit").isEqualTo(10_000);

        period(slo(100, 10), parked("p", 5_000, Double.NaN));
        assertThat(period(slo(100, 10), parked("p", 5_000, Double.NaN)).state())
                .as("an SLO instance launching beside a parked one alone is not contended").isEqualTo(ControllerState.RECOVERY);
    }

    /** The paper's own example (§3.4.1): RoBERTa-large, whose 25 ms launch cycle doubles under contention. */
    @Test
    void thePapersExampleIsAnEmergencyAtTheDefaults() {
        TokenController c = new TokenController(TokenParameters.DEFAULTS);
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        c.issue(t, List.of(slo(100, 25), train(500)));
        c.issue(t.plusMillis(5), List.of(slo(100, 50), train(500)));
        assertThat(c.issue(t.plusMillis(10), List.of(slo(100, 50), train(500))).state())
                .as("KLC 25 ms -> 50 ms").isEqualTo(ControllerState.EMERGENCY);

        TokenController d = new TokenController(TokenParameters.DEFAULTS);
        d.issue(t, List.of(slo(100, 25), train(500)));
        d.issue(t.plusMillis(5), List.of(slo(100, 30), train(500)));
        assertThat(d.issue(t.plusMillis(10), List.of(slo(100, 30), train(500))).state())
                .as("KLC 25 ms -> 30 ms").isEqualTo(ControllerState.CONTENTION);
    }

    @Test
    void anLlmFunctionIsProtectedAtItsOwnThreshold() {
        TokenController c = new TokenController(TokenParameters.DEFAULTS);
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        InstanceSample llm = new InstanceSample("llm", true, 0.3, 0.6, 100, 25, TokenParameters.LLM_KLC_THRESHOLD);
        c.issue(t, List.of(llm, train(500)));
        InstanceSample stretched = new InstanceSample("llm", true, 0.3, 0.6, 100, 35, TokenParameters.LLM_KLC_THRESHOLD);
        c.issue(t.plusMillis(5), List.of(stretched, train(500)));
        assertThat(c.issue(t.plusMillis(10), List.of(stretched, train(500))).state())
                .as("1.4 × Tmin is an emergency for an LLM (1.3), not for others (1.6)").isEqualTo(ControllerState.EMERGENCY);
    }

    @Test
    void aCycleThatEndsInAnIdlePeriodCounts() {
        period(slo(100, 10), train(500));
        period(slo(100, 30), train(500));
        // The instance synchronised (its cycle ended) in a period in which it launched nothing.
        TokenPlan plan = period(slo(0, 30), train(500));
        assertThat(plan.state()).isEqualTo(ControllerState.EMERGENCY);
    }

    @Test
    void thresholdsOutsideTheirRangeAreRefusedByName() {
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> new InstanceSample("x", true, 0.3, 0.6, 1, 1, 0.5))
                .hasMessageContaining("klcThreshold must be in (1, 10.0]");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TokenParameters.DEFAULTS.withEtaViolation(0.25))
                .hasMessageContaining("etaViolation must be in (1, 10.0]");
    }

    @Test
    void maxTokensFollowTheGpusSmCount() {
        assertThat(TokenParameters.maxTokensFor(108, Duration.ofMillis(5), Duration.ofNanos(100_000))).isEqualTo(5_400);
        assertThat(TokenParameters.maxTokensFor(132, Duration.ofMillis(5), Duration.ofNanos(100_000))).isEqualTo(6_600);
    }

    @Test
    void departedInstancesAreForgotten() {
        period(slo(100, 10), train(500));
        TokenPlan plan = period(train(500));
        assertThat(plan.grants()).extracting(TokenGrant::id).containsExactly("train");
        assertThat(plan.state()).isEqualTo(ControllerState.NONE);
    }

    @Test
    void aDepartedInstanceThatReturnsIsJudgedAfresh() {
        period(slo(100, 10), train(500));
        period(train(500));
        period(slo(100, 20), train(500));
        assertThat(period(slo(100, 20), train(500)).state()).as("its best cycle of 10 ms was forgotten with it")
                .isNotEqualTo(ControllerState.EMERGENCY);

        TokenController stayed = new TokenController(P);
        stayed.issue(now, List.of(slo(100, 10), train(500)));
        stayed.issue(now.plus(P.period()), List.of(slo(100, 20), train(500)));
        assertThat(stayed.issue(now.plus(P.period().multipliedBy(2)), List.of(slo(100, 20), train(500))).state())
                .as("the same cycles without the departure").isEqualTo(ControllerState.EMERGENCY);
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
            quotas.add(new double[] {request, request + rnd.nextDouble() * (1 - request), rnd.nextBoolean() ? 1 : 0,
                    rnd.nextInt(4) == 0 ? 1 : 0});
        }
        Instant t = Instant.EPOCH;
        for (int period = 0; period < 400; period++) {
            t = t.plusMillis(5);
            List<InstanceSample> samples = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                double[] q = quotas.get(i);
                long blocks = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(20_000);
                double klc = rnd.nextInt(4) == 0 ? 1 + rnd.nextDouble() * 100 : Double.NaN;
                // Parked instances come and go, as the autoscaler parks and wakes them.
                boolean parked = q[3] == 1 && rnd.nextInt(50) != 0;
                samples.add(new InstanceSample("i" + i, q[2] == 1, q[0], q[1], blocks, klc, Double.NaN, parked));
            }
            TokenPlan plan = c.issue(t, samples);
            for (int i = 0; i < count; i++) {
                long tokens = plan.grants().get(i).tokens();
                assertThat(tokens).isBetween(0L, (long) Math.floor(P.maxTokens() * quotas.get(i)[1]));
            }
        }
    }
}
