package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.dilu.simulator.PaperMix;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class FleetFunctionsTest {

    static List<String> names(List<FleetFunctions.Function> fs) {
        return fs.stream().map(FleetFunctions.Function::name).toList();
    }

    @Test
    void theSameSeedChoosesTheSameFunctionsProfilesAndArrivalsEveryRun() {
        List<FleetFunctions.Function> first = FleetFunctions.choose(FleetFunctions.Size.SMOKE);
        List<FleetFunctions.Function> again = FleetFunctions.choose(FleetFunctions.Size.SMOKE);
        assertThat(names(again)).isEqualTo(names(first)).hasSize(8);
        for (int i = 0; i < first.size(); i++) {
            assertThat(again.get(i).profile()).isEqualTo(first.get(i).profile());
            assertThat(again.get(i).trace().rps()).isEqualTo(first.get(i).trace().rps());
        }
        FleetFunctions.Size other = new FleetFunctions.Size(6, 2, 3600, 43);
        assertThat(names(FleetFunctions.choose(other))).as("another seed, another draw").isNotEqualTo(names(first));
    }

    @Test
    void theFullFleetIsEveryAzureFunctionOfTheRuleAndSixServeGenClientsInThePapersShapes() {
        List<FleetFunctions.Function> fleet = FleetFunctions.choose(FleetFunctions.Size.FULL);
        assertThat(fleet.stream().filter(f -> f.kind() == FleetFunctions.Kind.INFERENCE).count()).isEqualTo(18);
        assertThat(fleet.stream().filter(f -> f.kind() == FleetFunctions.Kind.LLM).count()).isEqualTo(6);
        assertThat(FleetFunctions.azure()).hasSize(18);
        assertThat(FleetFunctions.servegen()).hasSize(75).allSatisfy(c -> assertThat(c.windows()).hasSize(48));
        for (FleetFunctions.Function f : fleet) {
            PaperMix.Shape shape = f.kind() == FleetFunctions.Kind.LLM ? PaperMix.LLM : PaperMix.INFERENCE;
            assertThat(f.profile().requestShare()).isBetween(shape.requestLow(), shape.requestHigh());
            assertThat(f.profile().limitShare() - f.profile().requestShare()).isCloseTo(PaperMix.LIMIT_ABOVE_REQUEST, within(1e-9));
            assertThat(f.profile().memoryMiB()).isBetween(1024L * shape.memoryGbLow(), 1024L * shape.memoryGbHigh());
            assertThat(f.splittable()).isEqualTo(f.kind() == FleetFunctions.Kind.LLM);
            assertThat(f.trace().seconds()).isEqualTo(8 * 3600);
        }
    }

    /** Each kind's rates add up, on average, to one instance's rate at its request per function. */
    @Test
    void eachKindIsScaledToOneInstancesRequestRatePerFunction() {
        List<FleetFunctions.Function> fleet = FleetFunctions.choose(FleetFunctions.Size.FULL);
        for (FleetFunctions.Kind kind : FleetFunctions.Kind.values()) {
            List<FleetFunctions.Function> of = fleet.stream().filter(f -> f.kind() == kind).toList();
            double means = of.stream().mapToDouble(f -> f.trace().total() / f.trace().seconds()).sum();
            double perFunction = of.getFirst().profile().rpsAtRequest();
            // The Azure minutes' scaled totals are kept to a request; ServeGen's arrivals are drawn.
            assertThat(means / of.size()).as(kind.label()).isCloseTo(perFunction,
                    within(kind == FleetFunctions.Kind.INFERENCE ? 0.01 : 0.05 * perFunction));
        }
    }

    @Test
    void aMinutesRequestsStayInItsMinuteAndTheirFractionsCarryOver() {
        double[] rps = FleetFunctions.perSecond(new int[] {3, 0, 1}, 0.5, 180, new SplittableRandom(1));
        // 1.5 in the first minute (1 now, 0.5 carried), 0 in the second (the carry alone: none yet), 0.5 + 0.5 in the third.
        assertThat(Arrays.stream(rps, 0, 60).sum()).isEqualTo(1);
        assertThat(Arrays.stream(rps, 60, 120).sum()).isZero();
        assertThat(Arrays.stream(rps, 120, 180).sum()).isEqualTo(1);
    }

    @Test
    void aWindowsArrivalsHaveItsMeasuredRateWhateverItsFittedScale() {
        // A fit whose own mean (shape × scale = 50 s) is far from the measured 2 rps: the rate is what counts.
        List<FleetFunctions.Window> w = List.of(new FleetFunctions.Window(0, 2, true, 0.25, 200),
                new FleetFunctions.Window(600, 2, false, 0.5, 7));
        double[] rps = FleetFunctions.perSecond(w, 10, 1200, new SplittableRandom(3));
        assertThat(Arrays.stream(rps, 0, 600).sum() / 600).isCloseTo(20, within(4.0));
        assertThat(Arrays.stream(rps, 600, 1200).sum() / 600).isCloseTo(20, within(4.0));
    }

    @Test
    void theSamplersHaveTheirLawsMeans() {
        SplittableRandom rnd = new SplittableRandom(7);
        for (double shape : new double[] {0.1, 0.5, 1, 3}) {
            double sum = 0;
            int n = 200_000;
            for (int i = 0; i < n; i++) {
                sum += FleetFunctions.gamma(shape, rnd);
            }
            assertThat(sum / n).as("Gamma(%s) has mean %s", shape, shape).isCloseTo(shape, within(0.05 * shape + 0.01));
        }
        assertThat(Math.exp(FleetFunctions.lnGamma(5))).isCloseTo(24, within(1e-9));
        assertThat(Math.exp(FleetFunctions.lnGamma(0.5))).isCloseTo(Math.sqrt(Math.PI), within(1e-12));
    }
}
