package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.deviceplugin.backstop.RecordedNvml;
import io.dilu.testing.TestingClock;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the packed GPU check's NVML part concludes from the H100's own answers (RecordedNvml replaying
 * docs/gpu/h100-nvml-backstop-2026-11-26.txt for five processes standing for the probe's): every check passes, so
 * that on a GPU a failure says the GPU differs, not that the check is wrong.
 */
class NvmlBackstopCheckTest {

    private final List<Process> processes = new ArrayList<>();

    @AfterEach
    void end() {
        processes.forEach(Process::destroyForcibly);
    }

    private long[] standIns(RecordedNvml nvml) throws Exception {
        long[] pids = new long[RecordedNvml.Role.values().length];
        for (RecordedNvml.Role role : RecordedNvml.Role.values()) {
            Process p = new ProcessBuilder("sleep", "600").start();
            processes.add(p);
            nvml.assign(p.pid(), role);
            pids[role.ordinal()] = p.pid();
        }
        return pids;
    }

    private static String run(RecordedNvml nvml, long[] pids, TestingClock clock, int[] failures) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        failures[0] = NvmlBackstopCheck.judge(nvml.reader(), "GPU-h100", "NVIDIA H100 80GB HBM3", pids, clock,
                () -> clock.advance(Duration.ofSeconds(1)), new PrintStream(out, true, StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void theH100sAnswersPassEveryCheck() throws Exception {
        TestingClock clock = new TestingClock(Instant.parse("2026-11-26T12:00:00Z"));
        RecordedNvml nvml = RecordedNvml.load(clock);
        int[] failures = {-1};
        String out = run(nvml, standIns(nvml), clock, failures);

        assertThat(failures[0]).as(out).isZero();
        assertThat(out).contains("context-only", "518 MiB on a    0 MiB share", "memory within")
                .containsPattern("wide +pid \\d+ +518 MiB on a 1024 MiB share, busy +[0-9.]+% on a  10% limit: "
                        + "memory within, SM AT FAULT")
                .containsPattern("narrow .*on a 100% limit: memory within, SM within")
                .contains("BENCH nvml-backstop gpu=NVIDIA_H100_80GB_HBM3 context_mib=518 alloc_mib=1542 allowance_mib=518")
                .contains("checks_failed=0");
    }
}
