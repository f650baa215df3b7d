package io.dilu.core.profiling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TrialReportTest {

    @Test
    void theLastReportLineIsRead() {
        TrialReport r = TrialReport.parse("warming up\nDILU_TRIAL latency_s=0.5 throughput_rps=1\n"
                + "DILU_TRIAL latency_s=0.025 throughput_rps=320 memory_mib=2048\n");
        assertThat(r).isEqualTo(new TrialReport(0.025, 320, 2048));
        assertThat(r.measurement().latencyMillis()).isEqualTo(25.0);
        assertThat(TrialReport.parse(r.line())).isEqualTo(r);
    }

    @Test
    void memoryIsOptional() {
        assertThat(TrialReport.parse("DILU_TRIAL throughput_rps=10 latency_s=0.1").memoryMib()).isZero();
    }

    @Test
    void badReportsNameTheField() {
        assertThatThrownBy(() -> TrialReport.parse("")).hasMessageContaining("no report");
        assertThatThrownBy(() -> TrialReport.parse("RESULT p95_ms=3")).hasMessageContaining("no line starting with");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0 throughput_rps=1"))
                .hasMessageContaining("latency_s must be a number in (0, 3600]");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=NaN throughput_rps=1"))
                .hasMessageContaining("latency_s must be");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0.1 throughput_rps=1e9"))
                .hasMessageContaining("throughput_rps must be a number in 0..1e7");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0.1")).hasMessageContaining("lacks throughput_rps");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0.1 latency_s=0.2 throughput_rps=1"))
                .hasMessageContaining("repeats latency_s");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0.1 throughput_rps=1 memory_mib=-1"))
                .hasMessageContaining("memory_mib must be an integer in 0..");
        assertThatThrownBy(() -> TrialReport.parse("DILU_TRIAL latency_s=0.1 throughput_rps=x\u0001y"))
                .hasMessageContaining("got 'x?y'");
        assertThatThrownBy(() -> TrialReport.parse("x".repeat(5000))).hasMessageContaining("at most 4096");
    }
}
