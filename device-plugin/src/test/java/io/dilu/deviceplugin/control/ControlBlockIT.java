package io.dilu.deviceplugin.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.tokens.TokenParameters;
import io.dilu.deviceplugin.testing.GrantLead;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's Java view of the control block against the real hook, loaded into real processes running
 * on the emulated GPU: both sides must agree on every offset, and the token loop must hold a process to
 * its share.
 */
class ControlBlockIT {

    private static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));

    @TempDir
    Path tmp;

    private Path emuState;

    @BeforeEach
    void emulatedGpuOfOurOwn() throws IOException {
        TestingContainers.assumeRoot();
        emuState = Files.createDirectories(tmp.resolve("emu"));
    }

    private record Result(int exit, String out, String err) {}

    private Result run(Path controlDir, String... command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(NATIVE, controlDir, List.of(command)));
        pb.environment().put("DILU_EMU_DIR", emuState.toString());
        Path out = Files.createTempFile(tmp, "out", ".txt");
        Path err = Files.createTempFile(tmp, "err", ".txt");
        Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", List.of(command)).isTrue();
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }

    @Test
    void theHookReadsWhatJavaWritesAndJavaReadsWhatTheHookReports() throws Exception {
        ControlBlock block = ControlBlock.create(tmp.resolve("c1"), 1);
        block.grantTokens(0, Long.MAX_VALUE / 2);
        block.setMemoryLimit(0, 1024L << 20);
        block.setThrottled(0, true);
        block.heartbeat(System.nanoTime());

        Result bypass = run(block.directory(), NATIVE.resolve("tests/hook_probe").toString(), "bypass");
        assertThat(bypass.exit()).as(bypass.err()).isZero();
        assertThat(bypass.err()).doesNotContain("no usable control block");
        assertThat(block.blocksLaunched(0)).isEqualTo(700);

        Result alloc = run(block.directory(), NATIVE.resolve("tests/hook_probe").toString(), "alloc", "600", "0");
        assertThat(alloc.out()).contains("alloc=0 free_mib=424 total_mib=1024");
        assertThat(block.memoryUsed(0)).isEqualTo(600L << 20);

        Result over = run(block.directory(), NATIVE.resolve("tests/hook_probe").toString(), "alloc", "600", "0");
        // The first process died holding 600 MiB: reclaimed when this one attached, so it gets its own.
        assertThat(over.out()).contains("alloc=0 free_mib=424 total_mib=1024");
        assertThat(block.memoryRefusals(0)).isZero();
        Result refused = run(block.directory(), NATIVE.resolve("tests/hook_probe").toString(), "alloc", "2000", "0");
        assertThat(refused.out()).as("CUDA_ERROR_OUT_OF_MEMORY").contains("alloc=2 ");
        assertThat(block.memoryRefusals(0)).as("the refusal, counted where the agent reads it").isEqualTo(1);

        long cyclesBefore = block.klcCount(0);
        Result train = run(block.directory(), NATIVE.resolve("bin/emu-train").toString(), "--iterations", "5",
                "--kernels", "4", "--blocks", "108", "--block-us", "2000");
        assertThat(train.exit()).as(train.err()).isZero();
        long cycles = block.klcCount(0);
        assertThat(cycles - cyclesBefore).isEqualTo(5);
        double klcMillis = 0;
        for (long n = cyclesBefore + 1; n <= cycles; n++) {
            klcMillis += block.klcNanos(0, n) / 1e6 / 5;
        }
        Matcher compute = Pattern.compile("compute_ms_mean=([0-9.]+)").matcher(train.out());
        assertThat(compute.find()).as(train.out()).isTrue();
        // What the hook measured lies inside what the workload measured around its launches and
        // synchronisation, and is at least the emulated time: 4 kernels × 1 wave × 2 ms.
        assertThat(klcMillis).isLessThanOrEqualTo(Double.parseDouble(compute.group(1)) + 0.05)
                .isGreaterThanOrEqualTo(8.0 - 0.001);
    }

    @Test
    void theHookReleasesAPacedRefillFromWhereJavaWroteIt() throws Exception {
        // One 1 s period of 400 tokens in 4 parts, the first granted, and no agent after that: the hook must
        // find paced_until and pace_steps at Java's offsets to launch more than its first 108-block kernel.
        ControlBlock block = ControlBlock.create(tmp.resolve("paced"), 1);
        block.setMemoryLimit(0, 1024L << 20);
        block.setThrottled(0, true);
        block.setPeriodMicros(1_000_000);
        block.setTokensPerPeriod(0, 400);
        block.setPacedRefill(0, 400, 4);
        block.grantTokens(0, 100);
        block.heartbeat(System.nanoTime());

        Result rate = run(block.directory(), NATIVE.resolve("tests/hook_probe").toString(), "rate", "1.5", "0");

        assertThat(rate.exit()).as(rate.err()).isZero();
        assertThat(block.pacedUntil(0)).isEqualTo(400);
        assertThat(block.blocksLaunched(0)).as("blocks launched in the paced period").isEqualTo(432);
    }

    @Test
    void aBestEffortLaunchYieldsToAnSloCyclePageJavaMade() throws Exception {
        // The SLO neighbour's page as the agent makes and links it; its cycle written as its hook would.
        ControlBlock slo = ControlBlock.create(tmp.resolve("slo"), 1);
        Path neighbours = Files.createDirectories(tmp.resolve("neighbours"));
        Files.createLink(neighbours.resolve(ControlBlock.neighbourName(true, "slo")), slo.createCyclePage());
        ControlBlock block = ControlBlock.create(tmp.resolve("best-effort"), 1);
        block.grantTokens(0, Long.MAX_VALUE / 2);
        block.setMemoryLimit(0, 1024L << 20);
        block.setThrottled(0, true);
        block.setYieldMicros(0, 30_000_000);
        block.heartbeat(System.nanoTime());
        try (var ch = java.nio.channels.FileChannel.open(tmp.resolve("slo/cycle"), java.nio.file.StandardOpenOption.READ,
                java.nio.file.StandardOpenOption.WRITE)) {
            var page = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, ControlBlock.CYCLE_SIZE)
                    .order(java.nio.ByteOrder.nativeOrder());
            page.putLong(16, System.nanoTime()); // CLOCK_MONOTONIC, the hook's clock
            ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(NATIVE, block, neighbours,
                    List.of(NATIVE.resolve("tests/hook_probe").toString(), "launch", "10")));
            pb.environment().put("DILU_EMU_DIR", emuState.toString());
            Process p = pb.redirectErrorStream(true).redirectOutput(tmp.resolve("yield.txt").toFile()).start();
            // While the neighbour's cycle is in flight the launch waits (the bound Java wrote is 30 s).
            assertThat(p.waitFor(300, TimeUnit.MILLISECONDS)).as("the launch waited for the SLO cycle").isFalse();
            page.putLong(16, 0);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the launch went once the cycle ended").isTrue();
            assertThat(p.exitValue()).as(Files.readString(tmp.resolve("yield.txt"))).isZero();
        }
    }

    @Test
    void aLayoutOfAnotherVersionIsRefused() throws Exception {
        ControlBlock.create(tmp.resolve("c2"), 1);
        try (var ch = java.nio.channels.FileChannel.open(tmp.resolve("c2/grant"), java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {9, 0, 0, 0}), 4);
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ControlBlock.open(tmp.resolve("c2")))
                .hasMessageContaining("is not a version 4 Dilu control page");
        Result r = run(tmp.resolve("c2"), NATIVE.resolve("tests/hook_probe").toString(), "init");
        assertThat(r.err()).contains("is not a version 4 Dilu grant page");
    }

    @Test
    void theTokenLoopHoldsABestEffortProcessToItsLimit() throws Exception {
        // 108 SMs × 5 ms / 100 µs blocks: what the whole emulated GPU runs in one period.
        TokenParameters params = TokenParameters.DEFAULTS.withMaxTokens(5_400);
        ControlBlock limited = ControlBlock.create(tmp.resolve("limited"), 1);
        limited.heartbeat(System.nanoTime());
        try (TokenManager manager = new TokenManager(1, params, 1, InstantSource.system(), 1024)) {
            manager.gpu(0).add(new Tenant("train", limited, 0, 0.2, 0.25, false));
            manager.start();
            ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(NATIVE, limited, List.of(
                    NATIVE.resolve("bin/emu-train").toString(), "--seconds", "1.5", "--kernels", "4", "--blocks", "108",
                    "--block-us", "100")));
            pb.environment().put("DILU_EMU_DIR", emuState.toString());
            Process p = pb.redirectOutput(tmp.resolve("train.out").toFile()).redirectError(tmp.resolve("train.err").toFile())
                    .start();
            GrantLead lead = new GrantLead();
            while (p.isAlive()) {
                lead.sample(limited, 0);
                Thread.sleep(1);
            }
            // A busy machine can make the agent late: the hook then lends itself refills, paid back later.
            long lent = GrantLead.lendable(manager, params.period(), 1_350);
            assertThat(p.waitFor()).as(Files.readString(tmp.resolve("train.err"))).isZero();
            // Counted, not timed: a busy machine slows both sides down but cannot change these.
            assertThat(manager.gpu(0).lastPlan().tokensOf("train")).as("alone, a best-effort tenant gets its limit: "
                    + "25%% of 5,400 blocks per period").isEqualTo(1_350);
            assertThat(lead.worst()).as("launches never run ahead of the grant by more than the kernel that waits "
                    + "and what the hook lent itself while the agent was late (%d)", lent).isLessThanOrEqualTo(108 + lent);
            assertThat(limited.tokensGranted(0) - limited.blocksLaunched(0))
                    .as("greedy, it used what it was given, up to one period's tokens").isLessThanOrEqualTo(1_350 + 108);
            assertThat(limited.blocksLaunched(0)).as("and it did run").isGreaterThan(10 * 1_350);
        }
    }
}
