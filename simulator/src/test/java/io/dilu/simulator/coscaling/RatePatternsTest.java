package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.loadgen.RateTrace;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RatePatternsTest {

    @Test
    void patternsAreSeededAndHaveTheirShapes() {
        int seconds = 3600;
        RateTrace bursty = RatePatterns.bursty(seconds, 20, 1);
        assertThat(bursty.rps()).containsExactly(RatePatterns.bursty(seconds, 20, 1).rps());
        assertThat(bursty.rps()).isNotEqualTo(RatePatterns.bursty(seconds, 20, 2).rps());
        double[] sorted = bursty.rps();
        Arrays.sort(sorted);
        assertThat(sorted[seconds - 1] / sorted[seconds / 2]).as("peak over median").isGreaterThan(4);
        assertThat(Arrays.stream(bursty.rps()).filter(r -> r > 40).count()).as("bursts are short")
                .isBetween(20L, seconds / 4L);

        RateTrace periodic = RatePatterns.periodic(seconds, 20, 1);
        double samePhase = 0;
        double halfPeriod = 0;
        for (int t = 0; t + RatePatterns.PERIOD_S < seconds; t++) {
            samePhase += Math.abs(periodic.rate(t) - periodic.rate(t + RatePatterns.PERIOD_S));
            halfPeriod += Math.abs(periodic.rate(t) - periodic.rate(t + RatePatterns.PERIOD_S / 2));
        }
        assertThat(samePhase).as("a period apart, alike; half a period apart, not").isLessThan(halfPeriod / 3);

        RateTrace sporadic = RatePatterns.sporadic(seconds, 20, 1);
        long idle = Arrays.stream(sporadic.rps()).filter(r -> r == 0).count();
        assertThat(idle).as("idle most of the time").isGreaterThan(seconds / 2L).isLessThan(seconds);
    }
}
