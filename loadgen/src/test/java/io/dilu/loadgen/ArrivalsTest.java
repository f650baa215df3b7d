package io.dilu.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ArrivalsTest {

    private static List<Arrivals.Arrival> all(double[] rps, long seed) {
        Arrivals arrivals = new Arrivals(new RateTrace("t", rps), seed);
        List<Arrivals.Arrival> out = new ArrayList<>();
        for (Arrivals.Arrival a = arrivals.next(); a != null; a = arrivals.next()) {
            out.add(a);
        }
        return out;
    }

    private static int[] perSecond(List<Arrivals.Arrival> arrivals, int seconds) {
        int[] counts = new int[seconds];
        arrivals.forEach(a -> counts[a.second()]++);
        return counts;
    }

    @Test
    void eachSecondGetsItsRateWithFractionsCarriedToTheNext() {
        assertThat(perSecond(all(new double[] {2.5, 2.5, 0, 1, 40}, 1), 5)).containsExactly(2, 3, 0, 1, 40);
        // rates that add up to whole numbers only in exact arithmetic still send their total
        assertThat(all(new double[] {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, 1)).hasSize(1);
    }

    @Test
    void instantsAreInOrderWithinTheirSecondAndSeeded() {
        double[] rps = {50, 200, 3};
        List<Arrivals.Arrival> arrivals = all(rps, 7);
        assertThat(arrivals).hasSize(253);
        for (int i = 0; i < arrivals.size(); i++) {
            Arrivals.Arrival a = arrivals.get(i);
            assertThat(a.offsetNanos()).isBetween(0L, Arrivals.NANOS_PER_SECOND - 1);
            if (i > 0) {
                assertThat(a.dueNanos(0)).isGreaterThanOrEqualTo(arrivals.get(i - 1).dueNanos(0));
            }
        }
        assertThat(all(rps, 7)).isEqualTo(arrivals);
        assertThat(all(rps, 8)).isNotEqualTo(arrivals);
        // spread over the second, not bunched at its start: about half in each half
        long firstHalf = arrivals.stream().filter(a -> a.second() == 1 && a.offsetNanos() < 500_000_000L).count();
        assertThat(firstHalf).isBetween(70L, 130L);
    }
}
