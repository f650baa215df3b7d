package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.backstop.ShareBackstop.Fault;
import io.dilu.deviceplugin.backstop.Cgroups;
import io.dilu.deviceplugin.backstop.ProcessKiller;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.fabric8.kubernetes.api.model.Event;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backstop with real processes on the emulated GPU, none of them with the hook: what the GPU (the kernel's
 * records of the emulator) says they use, against their containers' shares.
 */
class BackstopIT {

    private static final long MIB = 1L << 20;
    /** A short window and grace, so that the test does not wait ten seconds for each; an allowance of 256 MiB. */
    private static final ShareBackstop.Bounds BOUNDS =
            new ShareBackstop.Bounds(256 * MIB, Duration.ofSeconds(2), 0.25, 0.10, Duration.ofSeconds(1));

    @TempDir
    Path tmp;

    private static List<String> probe(String... args) {
        List<String> command = new ArrayList<>(List.of(TestingContainers.nativeDir().resolve("tests/hook_probe").toString()));
        command.addAll(List.of(args));
        return command;
    }

    /** Rounds every 200 ms until {@code done} holds of the faults seen so far, for at most {@code seconds}. */
    private static List<Fault> roundsUntil(TestingBackstop node, int seconds, Predicate<List<Fault>> done)
            throws InterruptedException {
        List<Fault> seen = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline && !done.test(seen)) {
            seen.addAll(node.round());
            Thread.sleep(200);
        }
        return seen;
    }

    private static List<Event> events(TestingBackstop node, String reason) {
        return node.events().stream().filter(e -> reason.equals(e.getReason())).toList();
    }

    @Test
    void memoryPastTheShareWithoutTheHookIsEndedAndAProcessOfNoContainerIsReported() throws Exception {
        try (TestingBackstop node = new TestingBackstop(tmp, BOUNDS, true)) {
            TestingBackstop.Container c = node.pod("tenant", "greedy", 1, 25, 1024, "c0").getFirst();
            Process within = node.start(Optional.of(c), probe("alloc", "500", "60000"));
            Process attacker = node.start(Optional.of(c), probe("alloc", "4000", "60000"));
            Process stray = node.start(Optional.empty(), probe("alloc", "64", "60000"));

            List<Fault> faults = roundsUntil(node, 30, f -> !attacker.isAlive()
                    && f.stream().anyMatch(x -> x instanceof ShareBackstop.UnknownProcess u && u.process().pid() == stray.pid()));

            assertThat(attacker.waitFor(5, TimeUnit.SECONDS)).as("the process past its share was ended").isTrue();
            assertThat(attacker.exitValue()).isEqualTo(128 + 9);
            assertThat(within.isAlive()).as("its neighbour in the container, within the share").isTrue();
            assertThat(stray.isAlive()).as("a process of no container is reported, not ended").isTrue();
            assertThat(faults).anySatisfy(f -> assertThat(f).isInstanceOfSatisfying(ShareBackstop.MemoryExcess.class, m -> {
                assertThat(m.owner()).isEqualTo("tenant/greedy/c0");
                assertThat(m.heldBytes()).isGreaterThanOrEqualTo(4500 * MIB);
                assertThat(m.toEnd()).singleElement().satisfies(k -> assertThat(k.pid()).isEqualTo(attacker.pid()));
            }));
            assertThat(events(node, Backstop.SHARE_EXCEEDED)).singleElement().satisfies(e -> {
                assertThat(e.getInvolvedObject().getName()).isEqualTo("greedy");
                assertThat(e.getType()).isEqualTo("Warning");
                assertThat(e.getMessage()).contains("container c0", "ended pid " + attacker.pid(), "1024 MiB");
            });
            assertThat(node.counter("dilu_container_share_violations_total", "kind", "memory")).isEqualTo(1);
            assertThat(node.counter("dilu_container_share_violations_total", "kind", "unknown-process")).isEqualTo(1);
            assertThat(node.counter("dilu_backstop_kills_total", "outcome", "killed")).isEqualTo(1);
        }
    }

    @Test
    void eightProcessesWithoutTheHookShareOneContextAllowance() throws Exception {
        // Issue 36: eight processes without the hook, 1000 MiB each, on a 1024 MiB share, at the shipped allowance.
        // Per process (1024 MiB each, as shipped before) none was ended; one per container ends seven, the largest
        // first (equal figures: by pid), and the one left is within 1024 + 518 MiB.
        ShareBackstop.Bounds shipped = new ShareBackstop.Bounds(ShareBackstop.CONTEXT_ALLOWANCE_MIB * MIB,
                BOUNDS.smWindow(), BOUNDS.smMargin(), BOUNDS.busySlack(), BOUNDS.unknownGrace());
        try (TestingBackstop node = new TestingBackstop(tmp, shipped, true)) {
            TestingBackstop.Container c = node.pod("tenant", "eight", 1, 25, 1024, "c0").getFirst();
            List<Process> eight = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                eight.add(node.start(Optional.of(c), probe("alloc", "1000", "60000")));
            }

            List<Fault> faults = roundsUntil(node, 30, f -> node.counter("dilu_backstop_kills_total", "outcome", "killed") >= 7);
            for (Process p : eight) {
                p.waitFor(5, TimeUnit.SECONDS);
            }
            node.round(); // the ended processes gone: nothing more to end

            assertThat(eight.stream().filter(Process::isAlive)).as("one 1000 MiB process is within 1024 + 518 MiB")
                    .hasSize(1);
            assertThat(eight.stream().filter(p -> !p.isAlive())).allSatisfy(p -> assertThat(p.exitValue()).isEqualTo(128 + 9));
            assertThat(faults).filteredOn(ShareBackstop.MemoryExcess.class::isInstance).first()
                    .isInstanceOfSatisfying(ShareBackstop.MemoryExcess.class, m -> {
                        assertThat(m.boundBytes()).isEqualTo((1024 + 518) * MIB);
                        assertThat(m.heldBytes()).isGreaterThanOrEqualTo(2000 * MIB);
                    });
            assertThat(node.counter("dilu_backstop_kills_total", "outcome", "killed")).isEqualTo(7);
        }
    }

    @Test
    void launchesPastTheLimitWithoutTheHookAreReportedNotEnded() throws Exception {
        try (TestingBackstop node = new TestingBackstop(tmp, BOUNDS, true)) {
            TestingBackstop.Container c = node.pod("tenant", "launcher", 1, 10, 1024, "c0").getFirst();
            Process greedy = node.start(Optional.of(c), probe("rate", "30", "0"));

            // Four rounds at fault: beyond the three after which NVML's figures would end the process.
            List<Fault> faults = roundsUntil(node, 20,
                    f -> f.stream().filter(ShareBackstop.SmExcess.class::isInstance).count() >= 4);

            assertThat(faults).filteredOn(ShareBackstop.SmExcess.class::isInstance).first()
                    .isInstanceOfSatisfying(ShareBackstop.SmExcess.class, s -> {
                        assertThat(s.measure()).isEqualTo(ShareBackstop.Measure.SM_SHARE);
                        assertThat(s.share()).isGreaterThan(s.bound());
                        assertThat(s.smLimit()).isEqualTo(0.10);
                    });
            assertThat(greedy.isAlive()).as("an emulated GPU's SM faults are reported, never ended, however many rounds")
                    .isTrue();
            assertThat(events(node, Backstop.SHARE_EXCEEDED)).singleElement()
                    .satisfies(e -> assertThat(e.getMessage()).contains("thread blocks", "SM limit of 10%"));
            assertThat(node.counter("dilu_container_share_violations_total", "kind", "sm")).isEqualTo(1);
            assertThat(node.counter("dilu_backstop_kills_total", "outcome", "killed")).isZero();
        }
    }

    @Test
    void aSidecarOnTheGpuIsReportedOnItsPod() throws Exception {
        try (TestingBackstop node = new TestingBackstop(tmp, BOUNDS, true)) {
            List<TestingBackstop.Container> pod = node.pod("tenant", "with-sidecar", 1, 25, 1024, "c0", "sidecar");
            Process sidecar = node.start(Optional.of(pod.get(1)), probe("alloc", "64", "60000"));

            List<Fault> faults = roundsUntil(node, 20, f -> f.stream().anyMatch(ShareBackstop.UnknownProcess.class::isInstance));

            assertThat(faults).filteredOn(ShareBackstop.UnknownProcess.class::isInstance).first()
                    .isInstanceOfSatisfying(ShareBackstop.UnknownProcess.class, u -> {
                        assertThat(u.process().pid()).isEqualTo(sidecar.pid());
                        assertThat(u.owner()).contains("tenant/with-sidecar/sidecar");
                    });
            assertThat(events(node, Backstop.GPU_WITHOUT_SHARE)).singleElement().satisfies(e -> {
                assertThat(e.getInvolvedObject().getName()).isEqualTo("with-sidecar");
                assertThat(e.getMessage()).contains("container sidecar", "holds no dilu.io/gpu-sm share");
            });
            assertThat(sidecar.isAlive()).isTrue();
        }
    }

    @Test
    void theKillChecksThatThePidStillNamesTheProcessAtFault() throws Exception {
        try (TestingBackstop node = new TestingBackstop(tmp, BOUNDS, true)) {
            List<TestingBackstop.Container> pod = node.pod("tenant", "two", 0, 10, 1024, "a", "b");
            Process innocent = node.start(Optional.of(pod.get(0)), List.of("sleep", "60"));
            long start = node.proc().startTicks(innocent.pid()).orElseThrow();
            Optional<Cgroups.ContainerId> a = Optional.of(pod.get(0).id());
            Optional<Cgroups.ContainerId> b = Optional.of(pod.get(1).id());
            ProcessKiller killer = node.killer();

            // The pid as a process at fault had it, since reused by another process: another start time.
            assertThat(killer.kill(innocent.pid(), start + 1, a)).isEqualTo(ProcessKiller.Outcome.GONE);
            // The pid now names a process of another container.
            assertThat(killer.kill(innocent.pid(), start, b)).isEqualTo(ProcessKiller.Outcome.GONE);
            assertThat(innocent.isAlive()).isTrue();
            // The process at fault itself.
            assertThat(killer.kill(innocent.pid(), start, a)).isEqualTo(ProcessKiller.Outcome.KILLED);
            assertThat(innocent.waitFor(5, TimeUnit.SECONDS)).isTrue();
            assertThat(killer.kill(innocent.pid(), start, a)).isEqualTo(ProcessKiller.Outcome.GONE);
        }
    }
}
