package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The process runner on stand-in workloads (shell scripts): what it passes, and every way a trial fails. */
class ProcessTrialTest {

    @TempDir
    Path dir;

    private static ProcessTrial script(String body) {
        return new ProcessTrial(List.of("/bin/sh", "-c", body), Duration.ofSeconds(30));
    }

    @Test
    void passesTheShareBatchAndResultFileAndReadsTheReport() throws Exception {
        Path where = dir.resolve("where");
        // Reports the SM share as the latency and the batch as the throughput, from the environment it was given.
        ProcessTrial t = script("test -d \"$DILU_EMU_DIR\" || exit 9; echo \"$DILU_EMU_DIR\" > " + where + "; "
                + "echo noise; echo \"DILU_TRIAL latency_s=0.$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
                + "throughput_rps=$DILU_BATCH_SIZE memory_mib=7\" > \"$DILU_TRIAL_RESULT\"");

        TrialRun r = t.attempt(30, 4);

        assertThat(r.failure()).isEmpty();
        assertThat(r.report()).hasValueSatisfying(rep -> {
            assertThat(rep.latencySeconds()).isEqualTo(0.30);
            assertThat(rep.throughput()).isEqualTo(4.0);
            assertThat(rep.memoryMib()).isEqualTo(7);
        });
        assertThat(t.run(30, 4).latencyMillis()).isEqualTo(300.0);
        // Its own emulated GPU, in a directory removed after the run.
        Path gpu = Path.of(Files.readString(where).strip());
        assertThat(gpu).doesNotExist();
        t.attempt(30, 4);
        assertThat(Path.of(Files.readString(where).strip())).isNotEqualTo(gpu);
    }

    @Test
    void aFailedRunIsAFailedTrialWithItsExitStatusAndLastErrorLine() {
        TrialRun r = script("echo starting >&2; echo 'cannot allocate the activations: out of memory' >&2; exit 3").attempt(50, 16);

        assertThat(r.report()).isEmpty();
        assertThat(r.failure()).isEqualTo("exited with 3: cannot allocate the activations: out of memory");
        assertThat(r.measurement().latencyMillis()).isInfinite();
        assertThat(r.measurement().throughput()).isZero();
    }

    @Test
    void aMissingOrBadReportIsAFailedTrialNamingWhatIsWrong() {
        assertThat(script("exit 0").attempt(10, 1).failure()).startsWith("bad report: the trial wrote no report");
        assertThat(script("echo 'DILU_TRIAL latency_s=-1 throughput_rps=5' > \"$DILU_TRIAL_RESULT\"").attempt(10, 1).failure())
                .isEqualTo("bad report: latency_s must be a number in (0, 3600], got -1.0");
        assertThat(script("head -c 100000 /dev/zero | tr '\\0' x > \"$DILU_TRIAL_RESULT\"").attempt(10, 1).failure())
                .isEqualTo("bad report: the trial's report must be at most 4096 characters, got 4097");
        // Bytes that are not UTF-8 are read as replaced characters, and the field then refused.
        assertThat(script("printf 'DILU_TRIAL latency_s=\\377 throughput_rps=5\\n' > \"$DILU_TRIAL_RESULT\"").attempt(10, 1)
                .failure()).isEqualTo("bad report: latency_s must be a number in (0, 3600], got '?'");
        // A report with a failing exit status is still a failure: the status wins.
        assertThat(script("echo 'DILU_TRIAL latency_s=1 throughput_rps=5' > \"$DILU_TRIAL_RESULT\"; exit 1").attempt(10, 1)
                .failure()).isEqualTo("exited with 1");
    }

    @Test
    void aRunPastItsTimeoutOrThatCannotStartIsAFailedTrial() {
        ProcessTrial slow = new ProcessTrial(List.of("/bin/sh", "-c", "exec sleep 30"), Duration.ofMillis(300));
        assertThat(slow.attempt(10, 1).failure()).isEqualTo("did not finish within 0.3 s");
        TrialRun missing = new ProcessTrial(List.of(dir.resolve("no-such-workload").toString()), Duration.ofSeconds(5))
                .attempt(10, 1);
        assertThat(missing.failure()).startsWith("cannot start " + dir.resolve("no-such-workload"));
    }

    @Test
    void aHostileErrorLineIsClippedAndMadePrintable() {
        TrialRun r = script("printf 'bad\\033[31m%0500d\\n' 0 >&2; exit 2").attempt(10, 1);
        assertThat(r.failure()).startsWith("exited with 2: bad?[31m000").endsWith("…")
                .hasSize("exited with 2: ".length() + ProcessTrial.REASON_CHARS + 1);
    }
}
