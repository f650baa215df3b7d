package io.dilu.core.backstop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.backstop.ShareBackstop.Bounds;
import io.dilu.core.backstop.ShareBackstop.Fault;
import io.dilu.core.backstop.ShareBackstop.Grant;
import io.dilu.core.backstop.ShareBackstop.Measure;
import io.dilu.core.backstop.ShareBackstop.MemoryExcess;
import io.dilu.core.backstop.ShareBackstop.Observation;
import io.dilu.core.backstop.ShareBackstop.ProcessKey;
import io.dilu.core.backstop.ShareBackstop.Sample;
import io.dilu.core.backstop.ShareBackstop.SmExcess;
import io.dilu.core.backstop.ShareBackstop.UnknownProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ShareBackstopTest {

    private static final long MIB = 1L << 20;
    /** The agent's shipped bounds: one measured context per container, a 10 s window. */
    private static final Bounds BOUNDS = new Bounds(ShareBackstop.CONTEXT_ALLOWANCE_MIB * MIB, Duration.ofSeconds(10),
            0.25, 0.10, Duration.ofSeconds(10));
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final Instant NOW = T0.plusSeconds(60);
    private static final String GPU = "GPU-a";
    private static final Grant SHARE = new Grant("ns/pod/c", GPU, 1024 * MIB, 0.25, 5_000);

    private static ProcessKey pid(long pid) {
        return new ProcessKey(GPU, pid, 1000 + pid);
    }

    /** A process read every second for the last {@code seconds}, holding {@code memory}, using {@code share}. */
    private static Observation process(long pid, String owner, long memory, double share, int seconds) {
        List<Sample> samples = new ArrayList<>();
        for (int s = seconds - 1; s >= 0; s--) {
            samples.add(new Sample(NOW.minusSeconds(s), memory, share, Duration.ofSeconds(1)));
        }
        return new Observation(pid(pid), Optional.ofNullable(owner), true, NOW.minusSeconds(seconds), samples);
    }

    private static List<Fault> judge(Measure measure, List<Grant> grants, Observation... processes) {
        return ShareBackstop.judge(BOUNDS, measure, List.of(processes), grants, T0, NOW);
    }

    @Test
    void aContainerWithinItsShareAndTheContextAllowanceIsNoFault() {
        // 1024 MiB allocated through the hook + 518 MiB of context, as NVML reports an H100 process; busy 40% of the
        // time on a 25% limit, within 25% × 1.25 + 0.10.
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), process(1, "ns/pod/c", 1542 * MIB, 0.40, 30))).isEmpty();
    }

    @Test
    void memoryBeyondTheShareAndTheAllowanceEndsTheLargestProcessesFirst() {
        List<Fault> faults = judge(Measure.SM_SHARE, List.of(SHARE),
                process(1, "ns/pod/c", 900 * MIB, 0.1, 30),       // hooked, within its share
                process(2, "ns/pod/c", 3000 * MIB, 0.1, 30),      // allocated past the hook
                process(3, "ns/pod/c", 100 * MIB, 0.0, 30));
        assertThat(faults).singleElement().isInstanceOfSatisfying(MemoryExcess.class, m -> {
            assertThat(m.heldBytes()).isEqualTo(4000 * MIB);
            assertThat(m.boundBytes()).isEqualTo((1024 + 518) * MIB);
            assertThat(m.toEnd()).containsExactly(pid(2));
            assertThat(m.processes().getFirst().process()).isEqualTo(pid(2));
        });
    }

    @Test
    void theContextAllowanceIsTheContainersNotEachProcesss() {
        // Issue 36: eight processes without the hook, 1000 MiB each, on a 1024 MiB share. One allowance per
        // process would have let 1024 + 8 × 518 MiB go; one per container ends seven of them.
        Observation[] eight = new Observation[8];
        for (int i = 0; i < 8; i++) {
            eight[i] = process(i + 1, "ns/pod/c", 1000 * MIB, 0, 30);
        }
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), eight)).singleElement()
                .isInstanceOfSatisfying(MemoryExcess.class, m -> {
                    assertThat(m.heldBytes()).isEqualTo(8000 * MIB);
                    assertThat(m.boundBytes()).isEqualTo(1542 * MIB);
                    assertThat(m.toEnd()).containsExactly(pid(1), pid(2), pid(3), pid(4), pid(5), pid(6), pid(7));
                });
        // Two processes, each with a context, within the share together: the second context is the share's.
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), process(1, "ns/pod/c", 1018 * MIB, 0, 30),
                process(2, "ns/pod/c", 524 * MIB, 0, 30))).isEmpty();
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), process(1, "ns/pod/c", 1018 * MIB, 0, 30),
                process(2, "ns/pod/c", 525 * MIB, 0, 30))).singleElement().isInstanceOf(MemoryExcess.class);
    }

    @Test
    void endsAsManyAsItTakesAndNoMore() {
        Grant small = new Grant("ns/pod/c", GPU, 100 * MIB, 0.25, 1);
        Bounds strict = new Bounds(0, Duration.ofSeconds(10), 0.25, 0.10, Duration.ofSeconds(10));
        List<Fault> faults = ShareBackstop.judge(strict, Measure.SM_SHARE, List.of(
                process(1, "ns/pod/c", 80 * MIB, 0, 30), process(2, "ns/pod/c", 60 * MIB, 0, 30),
                process(3, "ns/pod/c", 50 * MIB, 0, 30)), List.of(small), T0, NOW);
        assertThat(((MemoryExcess) faults.getFirst()).toEnd()).containsExactly(pid(1), pid(2));
    }

    @Test
    void memoryIsJudgedOnProcessesPresentNowAndIgnoresUnknownFigures() {
        Observation gone = new Observation(pid(9), Optional.of("ns/pod/c"), false, T0,
                List.of(new Sample(NOW.minusSeconds(5), 9000 * MIB, 0, Duration.ofSeconds(1))));
        assertThat(judge(Measure.SM_SHARE, List.of(SHARE), gone, process(1, "ns/pod/c", -1, 0, 30))).isEmpty();
    }

    @Test
    void aProcessOfNoContainerIsReportedAfterTheGrace() {
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), process(7, null, 600 * MIB, 0.5, 5))).isEmpty();
        assertThat(judge(Measure.TIME_SHARE, List.of(SHARE), process(7, null, 600 * MIB, 0.5, 10)))
                .singleElement().isInstanceOfSatisfying(UnknownProcess.class, u -> {
                    assertThat(u.process()).isEqualTo(pid(7));
                    assertThat(u.owner()).isEmpty();
                    assertThat(u.memoryBytes()).isEqualTo(600 * MIB);
                });
    }

    @Test
    void aContainerWithAShareOfAnotherGpuIsUnknownOnThisOne() {
        Grant elsewhere = new Grant("ns/pod/c", "GPU-b", 1024 * MIB, 0.25, 0);
        Grant sidecarless = new Grant("ns/pod/c", GPU, 1024 * MIB, 0.25, 0);
        assertThat(judge(Measure.TIME_SHARE, List.of(elsewhere, sidecarless), process(3, "ns/pod/sidecar", 0, 0, 30)))
                .singleElement().isInstanceOfSatisfying(UnknownProcess.class,
                        u -> assertThat(u.owner()).contains("ns/pod/sidecar"));
        assertThat(judge(Measure.TIME_SHARE, List.of(elsewhere), process(3, "ns/pod/c", 0, 0, 30)))
                .singleElement().isInstanceOf(UnknownProcess.class);
    }

    @Test
    void anSmShareAboveTheLimitAndItsMarginOverTheWindowIsAFault() {
        // 25% limit, 31.25% allowed: 0.30 passes, 0.35 does not, 0.2 each of two processes does not either.
        assertThat(judge(Measure.SM_SHARE, List.of(SHARE), process(1, "ns/pod/c", 0, 0.30, 30))).isEmpty();
        assertThat(judge(Measure.SM_SHARE, List.of(SHARE), process(1, "ns/pod/c", 0, 0.35, 30)))
                .singleElement().isInstanceOfSatisfying(SmExcess.class, s -> {
                    assertThat(s.share()).isCloseTo(0.35, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.bound()).isCloseTo(0.3125, org.assertj.core.data.Offset.offset(1e-9));
                });
        assertThat(judge(Measure.SM_SHARE, List.of(SHARE), process(1, "ns/pod/c", 0, 0.2, 30),
                process(2, "ns/pod/c", 0, 0.2, 30))).singleElement().isInstanceOf(SmExcess.class);
    }

    @Test
    void shortLivedProcessesCountForTheWindow() {
        // Ten processes of one second each at 4× the GPU: 4 GPU-seconds in a 10 s window, 0.4 > 0.3125.
        List<Observation> bursts = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            bursts.add(new Observation(pid(100 + i), Optional.of("ns/pod/c"), false, NOW.minusSeconds(i + 1),
                    List.of(new Sample(NOW.minusSeconds(i), 0, 0.4, Duration.ofSeconds(1)))));
        }
        assertThat(ShareBackstop.judge(BOUNDS, Measure.SM_SHARE, bursts, List.of(SHARE), T0, NOW))
                .singleElement().isInstanceOf(SmExcess.class);
    }

    @Test
    void noSmJudgementBeforeAWholeWindowOfReadings() {
        assertThat(ShareBackstop.judge(BOUNDS, Measure.SM_SHARE, List.of(process(1, "ns/pod/c", 0, 3.0, 30)),
                List.of(SHARE), NOW.minusSeconds(5), NOW)).isEmpty();
    }

    @Test
    void aTimeShareAboveTheLimitIsAFaultWhateverTheHookCounted() {
        // Issue 36: NVML measured 66% busy for a container on a 10% grant whose hook counted a launch now and then.
        Grant tenth = new Grant("ns/pod/c", GPU, 1024 * MIB, 0.10, 26);
        assertThat(judge(Measure.TIME_SHARE, List.of(tenth), process(1, "ns/pod/c", 0, 0.66, 30))).singleElement()
                .isInstanceOfSatisfying(SmExcess.class, s -> {
                    assertThat(s.share()).isCloseTo(0.66, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.bound()).isCloseTo(0.10 * 1.25 + 0.10, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.launchesSeen()).isEqualTo(26);
                    assertThat(s.toEnd()).containsExactly(pid(1));
                });
        // The bound on a 25% limit: 0.25 × 1.25 + 0.10 = 0.4125, whatever the hook counted or whether it is known.
        for (long seen : new long[] {0, 1, 5_000_000, -1}) {
            Grant g = new Grant("ns/pod/c", GPU, 1024 * MIB, 0.25, seen);
            assertThat(judge(Measure.TIME_SHARE, List.of(g), process(1, "ns/pod/c", 0, 0.41, 30))).isEmpty();
            assertThat(judge(Measure.TIME_SHARE, List.of(g), process(1, "ns/pod/c", 0, 0.42, 30)))
                    .singleElement().isInstanceOf(SmExcess.class);
        }
    }

    @Test
    void overlappingTimeSharesAreJudgedAsEachContainersPartOfTheGpusTime() {
        // Issue 45, harm 6: without MPS the GPU time-slices, and NVML counts a process busy while its kernels wait out
        // a neighbour's slice. A 25% container read 52.6% beside a neighbour read 80%: 132.6% together, so its part
        // is 39.7%, within 41.25%. The neighbour's part, 60.3%, is within its 60% limit's bound, beyond a 10% one's.
        Grant honest = new Grant("ns/honest/c", GPU, 1024 * MIB, 0.25, 60_000);
        Observation waited = process(1, "ns/honest/c", 0, 0.526, 30);
        for (double neighbourLimit : new double[] {0.60, 0.10}) {
            Grant noisy = new Grant("ns/noisy/c", GPU, 1024 * MIB, neighbourLimit, 0);
            List<Fault> faults = judge(Measure.TIME_SHARE, List.of(honest, noisy), waited,
                    process(2, "ns/noisy/c", 0, 0.80, 30));
            assertThat(faults).noneMatch(f -> f.key().contains("/honest/"));
            if (neighbourLimit < 0.25) {
                assertThat(faults).singleElement().isInstanceOfSatisfying(SmExcess.class, s -> {
                    assertThat(s.overlap()).isCloseTo(1.326, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.share()).isCloseTo(0.80 / 1.326, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.toEnd()).containsExactly(pid(2));
                });
            } else {
                assertThat(faults).isEmpty();
            }
        }
        // Alone on the GPU the same reading is the container's own, and at fault.
        assertThat(judge(Measure.TIME_SHARE, List.of(honest), waited)).singleElement()
                .isInstanceOfSatisfying(SmExcess.class, s -> assertThat(s.overlap()).isEqualTo(1.0));
        // A process with no share of the GPU is reported, and shields nobody: it is not in the total.
        assertThat(judge(Measure.TIME_SHARE, List.of(honest), waited, process(3, null, 0, 0.9, 30)))
                .anySatisfy(f -> assertThat(f).isInstanceOf(SmExcess.class));
        // Two busy containers, both far beyond 10% limits, cannot shield each other: half of 200% each, both at fault.
        Grant a = new Grant("ns/a/c", GPU, 0, 0.10, 0);
        Grant b = new Grant("ns/b/c", GPU, 0, 0.10, 0);
        assertThat(judge(Measure.TIME_SHARE, List.of(a, b), process(4, "ns/a/c", 0, 1.0, 30),
                process(5, "ns/b/c", 0, 1.0, 30))).hasSize(2).allSatisfy(f -> assertThat(f)
                        .isInstanceOfSatisfying(SmExcess.class, s -> assertThat(s.share()).isCloseTo(0.5,
                                org.assertj.core.data.Offset.offset(1e-9))));
    }

    @Test
    void ofContainersAtFaultInTimeOnOneGpuTheFurthestBeyondItsBoundIsEndedFirst() {
        // 0.526 beside 0.70: 1.226 together. The 25% container's part (42.9%) is just beyond its 41.25%; the 10% one's
        // (57.1%) is 2.5× its 22.5%: only that one is named to end; the other waits behind it, still reported.
        Grant honest = new Grant("ns/honest/c", GPU, 0, 0.25, 60_000);
        Grant noisy = new Grant("ns/noisy/c", GPU, 0, 0.10, 0);
        List<Fault> faults = judge(Measure.TIME_SHARE, List.of(honest, noisy), process(1, "ns/honest/c", 0, 0.526, 30),
                process(2, "ns/noisy/c", 0, 0.70, 30));
        assertThat(faults).hasSize(2).allSatisfy(f -> assertThat(f).isInstanceOf(SmExcess.class));
        assertThat(faults).filteredOn(f -> f.key().contains("/noisy/")).singleElement()
                .isInstanceOfSatisfying(SmExcess.class, s -> {
                    assertThat(s.toEnd()).containsExactly(pid(2));
                    assertThat(s.behind()).isEmpty();
                });
        assertThat(faults).filteredOn(f -> f.key().contains("/honest/")).singleElement()
                .isInstanceOfSatisfying(SmExcess.class, s -> {
                    assertThat(s.toEnd()).isEmpty();
                    assertThat(s.behind()).contains("ns/noisy/c");
                });
        // Blocks, the grant's own unit, do not overlap: each container is judged by its own, whatever its neighbours.
        assertThat(judge(Measure.SM_SHARE, List.of(honest, noisy), process(1, "ns/honest/c", 0, 0.35, 30),
                process(2, "ns/noisy/c", 0, 0.70, 30))).hasSize(2).allSatisfy(f -> assertThat(f)
                        .isInstanceOfSatisfying(SmExcess.class, s -> assertThat(s.toEnd()).isNotEmpty()));
    }

    @Test
    void whatEndedIsNotEndedAgainNorMadeUpForByItsNeighbours() {
        Grant tenth = new Grant("ns/pod/c", GPU, 1024 * MIB, 0.10, 1);
        Observation ended = new Observation(pid(5), Optional.of("ns/pod/c"), false, T0,
                List.of(new Sample(NOW.minusSeconds(2), 0, 5.0, Duration.ofSeconds(1)))); // 0.5 of the window
        // Still at fault while the ended process is in the window, but no one is left to end.
        assertThat(judge(Measure.TIME_SHARE, List.of(tenth), ended, process(1, "ns/pod/c", 0, 0.2, 30)))
                .singleElement().isInstanceOfSatisfying(SmExcess.class, s -> assertThat(s.toEnd()).isEmpty());
        // Two running: the larger is ended, the one within the bound stays.
        assertThat(judge(Measure.TIME_SHARE, List.of(tenth), process(1, "ns/pod/c", 0, 0.05, 30),
                process(2, "ns/pod/c", 0, 0.5, 30))).singleElement()
                .isInstanceOfSatisfying(SmExcess.class, s -> assertThat(s.toEnd()).containsExactly(pid(2)));
    }

    @Test
    void samplesOutsideTheWindowAndUnknownSharesDoNotCount() {
        Observation old = new Observation(pid(1), Optional.of("ns/pod/c"), true, T0, List.of(
                new Sample(NOW.minusSeconds(30), 0, 5.0, Duration.ofSeconds(1)),
                new Sample(NOW, 0, Double.NaN, Duration.ofSeconds(1))));
        assertThat(judge(Measure.SM_SHARE, List.of(SHARE), old)).isEmpty();
    }

    @Test
    void faultsHaveStableKeysPerContainerOrProcess() {
        Fault a = judge(Measure.SM_SHARE, List.of(SHARE), process(2, "ns/pod/c", 9000 * MIB, 0, 30)).getFirst();
        Fault b = judge(Measure.SM_SHARE, List.of(SHARE), process(3, "ns/pod/c", 9500 * MIB, 0, 30)).getFirst();
        assertThat(a.key()).isEqualTo(b.key()).isEqualTo("memory/ns/pod/c/GPU-a");
        assertThat(judge(Measure.SM_SHARE, List.of(), process(4, null, 0, 0, 30)).getFirst().key())
                .isEqualTo("unknown/GPU-a/4/1004");
    }

    @Test
    void hugeFiguresDoNotOverflowTheBound() {
        Grant all = new Grant("ns/pod/c", GPU, Long.MAX_VALUE - 1, 1, 1);
        assertThat(judge(Measure.SM_SHARE, List.of(all), process(1, "ns/pod/c", Long.MAX_VALUE, 0, 30))).isEmpty();
    }

    @Test
    void boundsAreChecked() {
        assertThatThrownBy(() -> new Bounds(-1, Duration.ofSeconds(1), 0, 0.1, Duration.ZERO))
                .hasMessageContaining("contextAllowance");
        assertThatThrownBy(() -> new Bounds(0, Duration.ZERO, 0, 0.1, Duration.ZERO)).hasMessageContaining("smWindow");
        assertThatThrownBy(() -> new Bounds(0, Duration.ofSeconds(1), 0, -0.1, Duration.ZERO)).hasMessageContaining("busySlack");
        assertThatThrownBy(() -> new Bounds(0, Duration.ofSeconds(1), 0, 1, Duration.ZERO)).hasMessageContaining("busySlack");
    }
}
