package io.dilu.loadgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.StringReader;
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
}
