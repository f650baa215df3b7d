package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.backstop.ShareBackstop.Fault;
import io.dilu.deviceplugin.backstop.RecordedNvml;
import io.dilu.deviceplugin.backstop.RecordedNvml.Role;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.testing.TestingClock;
import io.fabric8.kubernetes.api.model.Event;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backstop's rules against what an H100 answered (issue 36): the real backstop over the real NVML reader, NVML
 * standing in as {@link RecordedNvml}, which replays docs/gpu/h100-nvml-backstop-2026-11-26.txt for real processes in
 * the test's cgroups, and ends them for real. Rounds at the agent's shipped bounds and one-second interval, on a clock
 * the test moves: nothing waits for wall-clock time but the kills.
 */
class BackstopOnRecordedH100IT {

    private static final long MIB = 1L << 20;
    /** The backstop as the agent ships it: its bounds and its rounds at fault before an SM kill. */
    private static final NodeAgentConfig.BackstopConfig SHIPPED = TestingBackstop.shipped(Map.of());
    private static final int ROUNDS_TO_END = SHIPPED.killComputeAfterRounds();

    @TempDir
    Path tmp;

    private final TestingClock clock = new TestingClock(Instant.parse("2026-11-26T12:00:00Z"));
    private final List<Fault> faults = new ArrayList<>();
    private TestingBackstop node;
    private RecordedNvml nvml;
    /** The tenant within its share, of {@link #recordedScene}. */
    private TestingBackstop.Container honest;

    private TestingBackstop node() throws IOException {
        nvml = RecordedNvml.load(clock);
        node = TestingBackstop.overRecordedNvml(tmp, SHIPPED.bounds(), ROUNDS_TO_END, nvml, clock);
        return node;
    }

    @AfterEach
    void close() {
        if (node != null) {
            node.close();
        }
    }

    /** A process standing for one of the recording's, in {@code container}: it runs until it is ended. */
    private Process process(TestingBackstop.Container container, Role role) throws IOException {
        Process p = node.start(Optional.of(container), List.of("sleep", "600"));
        nvml.assign(p.pid(), role);
        return p;
    }

    /** One round a second of the clock, {@code each} before it, until {@code done} or {@code rounds} have run. */
    private int roundsUntil(int rounds, Runnable each, BooleanSupplier done) {
        for (int r = 1; r <= rounds; r++) {
            clock.advance(Duration.ofSeconds(1));
            each.run();
            faults.addAll(node.round());
            if (done.getAsBoolean()) {
                return r;
            }
        }
        return -1;
    }

    private double killed() {
        return node.counter("dilu_backstop_kills_total", "outcome", "killed");
    }

    /** A round once the processes ended have gone: nothing more is ended. */
    private void nothingMoreIsEnded() {
        double before = killed();
        roundsUntil(1, () -> {}, () -> true);
        assertThat(killed()).as("a process already ended is not ended again").isEqualTo(before);
    }

    private static boolean ended(Process p) {
        try {
            return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 128 + 9;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private List<Event> events(String pod) {
        return node.events().stream().filter(e -> Backstop.SHARE_EXCEEDED.equals(e.getReason())
                && pod.equals(e.getInvolvedObject().getName())).toList();
    }

    @Test
    void memoryMultipliedOverProcessesIsHeldToTheShareAndOneContext() throws Exception {
        // The H100 case: one process within its share (its context), and eight that each allocated 1024 MiB
        // past the hook, 1542 MiB each as NVML reported such a process: 12,854 MiB on a 1,024 MiB share.
        node();
        TestingBackstop.Container c = node.pod("tenant", "many", 1, 25, 1024, "c0").getFirst();
        Process within = process(c, Role.CONTEXT_ONLY);
        List<Process> attackers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            attackers.add(process(c, Role.CONTEXT_AND_1024_MIB));
        }

        roundsUntil(5, () -> {}, () -> killed() >= 8);

        assertThat(attackers).as("every process holding 1542 MiB is ended").allSatisfy(p -> assertThat(ended(p)).isTrue());
        nothingMoreIsEnded();
        assertThat(within.isAlive()).as("the container's one context is its allowance").isTrue();
        assertThat(faults).filteredOn(ShareBackstop.MemoryExcess.class::isInstance).first()
                .isInstanceOfSatisfying(ShareBackstop.MemoryExcess.class, m -> {
                    assertThat(m.heldBytes()).isEqualTo((8 * nvml.memoryMib(Role.CONTEXT_AND_1024_MIB)
                            + nvml.memoryMib(Role.CONTEXT_ONLY)) * MIB);
                    assertThat(m.boundBytes()).isEqualTo((1024 + 518) * MIB);
                    assertThat(m.toEnd()).hasSize(8).noneMatch(k -> k.pid() == within.pid());
                });
        assertThat(events("many")).last().satisfies(e -> assertThat(e.getMessage())
                .contains("all its processes together", "one driver context's allowance (bound 1542 MiB)", "ended pid"));
        assertThat(node.counter("dilu_container_share_violations_total", "kind", "memory")).isEqualTo(1);
        assertThat(killed()).isEqualTo(8);
    }

    @Test
    void memoryTakenBetweenRoundsIsEndedByTheSweep() throws Exception {
        // Issue 45, escape 4: two processes hold their contexts (1,036 MiB on a 1,024 MiB share: within share + one
        // context) when a round reads them; then each allocates 1,024 MiB past the hook, 3,084 MiB together. The next
        // round is a second away; the sweep between rounds reads NVML's list again and ends the larger at once.
        node();
        TestingBackstop.Container c = node.pod("tenant", "between", 1, 25, 1024, "c0").getFirst();
        Process a = process(c, Role.CONTEXT_ONLY);
        Process b = process(c, Role.CONTEXT_ONLY);
        roundsUntil(1, () -> {}, () -> true);
        assertThat(killed()).isZero();
        nvml.assign(a.pid(), Role.CONTEXT_AND_1024_MIB);
        nvml.assign(b.pid(), Role.CONTEXT_AND_1024_MIB);

        List<Fault> swept = node.sweep();

        assertThat(swept).singleElement().isInstanceOfSatisfying(ShareBackstop.MemoryExcess.class, m -> {
            assertThat(m.heldBytes()).isEqualTo(2 * nvml.memoryMib(Role.CONTEXT_AND_1024_MIB) * MIB);
            assertThat(m.toEnd()).hasSize(1);
        });
        assertThat(killed()).isEqualTo(1);
        Process first = a.pid() < b.pid() ? a : b;
        assertThat(ended(first)).as("equal figures: the lowest pid first").isTrue();
        assertThat(node.sweep()).as("the other, alone, within share and one context").isEmpty();
        assertThat(events("between")).singleElement().satisfies(e -> assertThat(e.getMessage()).contains("ended pid"));
    }

    @Test
    void processesBeyondTheHooksSlotsCountByTheirCgroup() throws Exception {
        // 33 processes holding a context each (518 MiB as NVML reported it), none of them in a slot of the hook's
        // report page (it has 32): 17,094 MiB on a 16,384 MiB share is 192 MiB past share + allowance. Every one is
        // the container's by its cgroup: one ends, and the 32 left are within the bound.
        node();
        TestingBackstop.Container c = node.pod("tenant", "wide", 1, 25, 16_384, "c0").getFirst();
        List<Process> processes = new ArrayList<>();
        for (int i = 0; i < ControlBlock.MAX_PROCESSES + 1; i++) {
            processes.add(process(c, Role.CONTEXT_ONLY));
        }

        roundsUntil(5, () -> {}, () -> killed() >= 1);

        // Equal figures: the lowest pid first.
        Process first = processes.stream().min(java.util.Comparator.comparingLong(Process::pid)).orElseThrow();
        assertThat(ended(first)).isTrue();
        nothingMoreIsEnded();
        assertThat(killed()).isEqualTo(1);
        assertThat(processes.stream().filter(Process::isAlive)).hasSize(ControlBlock.MAX_PROCESSES);
        assertThat(faults).filteredOn(ShareBackstop.MemoryExcess.class::isInstance).first()
                .isInstanceOfSatisfying(ShareBackstop.MemoryExcess.class,
                        m -> assertThat(m.processes()).hasSize(ControlBlock.MAX_PROCESSES + 1));
    }

    @Test
    void computeMaskedByAHookedLaunchIsEndedAfterItsRoundsAtFault() throws Exception {
        // The H100 case: kernels launched past the hook keep the GPU busy (here: as the recording's process
        // running 528-block kernels a quarter of the time, 2 ms on, 6 ms off) while the hook counts one launch of 26
        // blocks every 200 ms, on a 10% grant. Beside it a container granted 60%, busy the same way, within its bound.
        node();
        TestingBackstop.Container masked = node.pod("tenant", "masked", 1, 10, 1024, "c0").getFirst();
        TestingBackstop.Container honest = node.pod("tenant", "honest", 1, 60, 1024, "c0").getFirst();
        Process attacker = process(masked, Role.WIDE_KERNELS_QUARTER_TIME);
        Process neighbour = process(honest, Role.WIDE_KERNELS_QUARTER_TIME);
        long[] counted = {0};

        int endedAt = roundsUntil(40, () -> {
            counted[0] += 5 * 26;
            try {
                node.hookLaunched(masked, counted[0]);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, () -> killed() >= 1);

        assertThat(endedAt).as("the masked container's process is ended within 40 s").isPositive();
        assertThat(ended(attacker)).isTrue();
        nothingMoreIsEnded();
        assertThat(neighbour.isAlive()).as("60%% granted, busy as much: within 60%% × 1.25 + 10%%").isTrue();
        ShareBackstop.SmExcess sm = faults.stream().filter(ShareBackstop.SmExcess.class::isInstance)
                .map(ShareBackstop.SmExcess.class::cast).findFirst().orElseThrow();
        assertThat(sm.owner()).isEqualTo("tenant/masked/c0");
        assertThat(sm.measure()).isEqualTo(ShareBackstop.Measure.TIME_SHARE);
        assertThat(sm.launchesSeen()).as("the hook saw launches: no longer a mask").isPositive();
        assertThat(sm.share()).isGreaterThan(sm.bound());
        assertThat(sm.bound()).isCloseTo(0.10 * 1.25 + 0.10, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(faults).noneMatch(f -> f.key().contains("/honest/"));
        long atFault = faults.stream().filter(f -> f.key().equals(sm.key())).count();
        assertThat(atFault).as("ended only after %d rounds at fault in a row", ROUNDS_TO_END)
                .isGreaterThanOrEqualTo(ROUNDS_TO_END);
        assertThat(events("masked")).singleElement().satisfies(e -> assertThat(e.getMessage())
                .contains("as NVML reports it", "beyond its SM limit of 10%", "its hook counted"));
        // The kill is told too, once the pod's minute of events is over.
        clock.advance(Duration.ofMinutes(1));
        node.flushEvents();
        assertThat(events("masked")).hasSize(2).last().satisfies(e -> assertThat(e.getMessage())
                .contains("ended pid " + attacker.pid(), "after " + ROUNDS_TO_END + " rounds at fault"));
        assertThat(node.counter("dilu_container_share_violations_total", "kind", "sm")).isEqualTo(1);
        assertThat(killed()).isEqualTo(1);
    }

    /**
     * The recording's own scene (issue 45, harm 6): three busy processes time-slicing the H100, as NVML answered for
     * them. The tenant under test runs the quarter-time kernels (2 ms of every 8: 25% of the GPU's time alone) on a 25%
     * grant, its hook charging its 528-block kernels (66,000 blocks a second); NVML reads it about 53% busy, beyond
     * 41.25%, because it waited out its neighbours' slices. Beside it the narrow and the wide kernels, back to back.
     *
     * @param wideLimit the SM limit of the container running the wide kernels
     */
    private List<Process> recordedScene(int wideLimit) throws IOException {
        node();
        honest = node.pod("tenant", "honest", 1, 25, 1024, "c0").getFirst();
        TestingBackstop.Container narrow = node.pod("other", "narrow", 1, 35, 1024, "c0").getFirst();
        TestingBackstop.Container wide = node.pod("other", "wide", 1, wideLimit, 1024, "c0").getFirst();
        return List.of(process(honest, Role.WIDE_KERNELS_QUARTER_TIME), process(narrow, Role.NARROW_KERNELS),
                process(wide, Role.WIDE_KERNELS));
    }

    private void honestHookCounts(int round) {
        try {
            node.hookLaunched(honest, round * 66_000L);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aTenantWithinItsShareOutlastsSixtyRoundsBesideBusyNeighbours() throws Exception {
        List<Process> scene = recordedScene(40);

        int[] round = {0};
        roundsUntil(60, () -> honestHookCounts(++round[0]), () -> false);

        assertThat(round[0]).isEqualTo(60);
        assertThat(scene).as("no process ended").allSatisfy(p -> assertThat(p.isAlive()).isTrue());
        assertThat(killed()).isZero();
        assertThat(faults).as("each container judged by its part of the GPU's time").isEmpty();
    }

    @Test
    void aNeighbourBeyondItsOwnGrantIsStillEndedAndTheTenantWithinItsShareIsNot() throws Exception {
        List<Process> scene = recordedScene(10);
        Process within = scene.get(0), wide = scene.get(2);

        int[] round = {0};
        int endedAt = roundsUntil(40, () -> honestHookCounts(++round[0]), () -> killed() >= 1);

        assertThat(endedAt).as("the wide kernels on a 10% grant are ended within 40 s").isPositive();
        assertThat(ended(wide)).isTrue();
        assertThat(within.isAlive()).isTrue();
        assertThat(killed()).isEqualTo(1);
        assertThat(faults).filteredOn(ShareBackstop.SmExcess.class::isInstance).map(ShareBackstop.SmExcess.class::cast)
                .allSatisfy(f -> {
                    assertThat(f.owner()).isEqualTo("other/wide/c0");
                    assertThat(f.overlap()).as("three busy processes read busy together beyond the window")
                            .isGreaterThan(1.5);
                    assertThat(f.share()).isGreaterThan(f.bound());
                });
        assertThat(events("wide")).first().satisfies(e -> assertThat(e.getMessage())
                .contains("its part of the GPU's time", "beyond its SM limit of 10%"));
    }

    @Test
    void dynamicParallelismIsBoundedByTheComputeRule() throws Exception {
        // Kernels launched by a kernel on the GPU never pass through the hook: it charges the parent launch (one block
        // a second here) and NVML sees the GPU kept busy (as the recording's process with kernels filling every SM,
        // back to back). On a 25% grant the process is ended.
        node();
        TestingBackstop.Container c = node.pod("tenant", "nested", 1, 25, 1024, "c0").getFirst();
        Process parent = process(c, Role.WIDE_KERNELS);
        long[] counted = {0};

        int endedAt = roundsUntil(40, () -> {
            try {
                node.hookLaunched(c, ++counted[0]);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, () -> killed() >= 1);

        assertThat(endedAt).as("ended within 40 s").isPositive();
        assertThat(ended(parent)).isTrue();
        nothingMoreIsEnded();
        assertThat(faults).filteredOn(ShareBackstop.SmExcess.class::isInstance).first()
                .isInstanceOfSatisfying(ShareBackstop.SmExcess.class, s -> {
                    assertThat(s.share()).isGreaterThan(s.bound());
                    assertThat(s.bound()).isCloseTo(0.25 * 1.25 + 0.10, org.assertj.core.data.Offset.offset(1e-9));
                    assertThat(s.toEnd()).singleElement().satisfies(k -> assertThat(k.pid()).isEqualTo(parent.pid()));
                });
    }
}
