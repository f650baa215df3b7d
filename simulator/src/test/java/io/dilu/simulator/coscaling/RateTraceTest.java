package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.StringReader;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RateTraceTest {

    @Test
    void readsOneRowPerSecondAndWritesItBack() throws Exception {
        RateTrace t = RateTrace.readCsv(new StringReader("second,rps\n0,10\n1,12.5\n\n2,0\n"), "f.csv");
        assertThat(t.rps()).containsExactly(10, 12.5, 0);
        assertThat(t.total()).isEqualTo(22.5);
        assertThat(RateTrace.readCsv(new StringReader(t.toCsv()), "again").rps()).containsExactly(t.rps());
    }

    @Test
    void badRowsAreNamedByLine() {
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("time,rps\n0,1\n"), "f.csv"))
                .hasMessage("f.csv:1: the header must be second,rps, got time,rps");
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("second,rps\n0,1\n2,1\n"), "f.csv"))
                .hasMessage("f.csv:3: second must be 1 (one row per second, in order), got 2");
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("second,rps\n0,-1\n"), "f.csv"))
                .hasMessage("f.csv:2: rps must be in 0..1000000.0, got -1");
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("second,rps\n0,NaN\n"), "f.csv"))
                .hasMessageStartingWith("f.csv:2: rps must be in");
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("second,rps\n0,x\n"), "f.csv"))
                .hasMessageStartingWith("f.csv:2: second must be an integer and rps a number");
        assertThatThrownBy(() -> RateTrace.readCsv(new StringReader("second,rps\n"), "f.csv"))
                .hasMessage("f.csv:1: no rows after the header");
    }

    @Test
    void aPerRequestTraceIsCountedPerSecondFromTheFirstRequest() throws Exception {
        String azure = """
                TIMESTAMP,ContextTokens,GeneratedTokens
                2023-11-16 18:17:03.9799600,4808,10
                2023-11-16 18:17:04.0319600,3180,8
                2023-11-16 18:17:04.5000000,100,8
                2023-11-16 18:17:06.0000000,100,8
                """;
        RateTrace t = RateTrace.fromRequests(new StringReader(azure), "code");
        assertThat(t.rps()).containsExactly(1, 2, 0, 1);
        assertThatThrownBy(() -> RateTrace.fromRequests(new StringReader(azure.replace("18:17:06", "18:17:01")), "code"))
                .hasMessageStartingWith("code:5: requests must be in time order");
        assertThatThrownBy(() -> RateTrace.fromRequests(new StringReader(azure.replace("2023-11-16 18:17:04.5", "yesterday")), "code"))
                .hasMessageStartingWith("code:4: TIMESTAMP must be");
    }

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
