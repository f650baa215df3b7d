package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.core.tokens.TokenPlan;
import io.dilu.deviceplugin.control.ControlBlock;
import io.dilu.deviceplugin.testing.GrantLead;
import io.dilu.deviceplugin.testing.TestingContainers;
import io.dilu.deviceplugin.tokens.Tenant;
import io.dilu.deviceplugin.tokens.TokenManager;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Vertical scaling end to end at the node agent's shipped defaults: a real hook in an emulated inference
 * server and in a training loop sharing one emulated GPU, the real token loop between them. Asserts what the
 * controller did and what the hooks counted (emergencies declared, the best-effort neighbour held below its
 * request, never under what the inference's limit leaves it, while they last, and within its grant throughout), not latencies, which a busy machine stretches;
 * the latency comparison is {@code ./dilu bench colocation}.
 */
class VerticalScalingIT {

    private static final double INFERENCE_LIMIT = 0.90;
    private static final int PLAYS = 3;
    private static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));

    @TempDir
    Path tmp;

    @Test
    void aStretchedInferenceCycleShrinksTheTrainingNeighbourAtTheShippedDefaults() throws Exception {
        TestingContainers.assumeRoot();
        TokenParameters params = ColocationBench.shippedParameters();
        assertThat(params.etaViolation()).as("the shipped threshold").isEqualTo(1.6);
        assertThat(params.maxTokens()).as("108 SMs × 5 ms / 100 µs").isEqualTo(5_400);
        // How many periods are emergencies depends on how the machine interleaves the two processes: 9 to 118 of
        // ~800 in runs on one machine, and none in a fresh-clone CI run whose machine was building Kubernetes beside
        // it. That there are some is the point: the scenario is played again, up to three times, until one has any;
        // what an emergency does to training is asserted on that play.
        Play play = null;
        for (int attempt = 1; attempt <= PLAYS && (play == null || play.emergencies() == 0); attempt++) {
            play = play(params, Files.createDirectories(tmp.resolve("play-" + attempt)));
        }
        assertThat(play.emergencies()).as("inference cycles stretched behind training kernels are emergencies, in one "
                + "of %d plays (the last: %d emergency, %d contention periods)", PLAYS, play.emergencies(),
                play.contention()).isGreaterThan(0);
        ControlBlock inf = play.inference();
        List<Long> trainingTokensInEmergency = play.trainingTokensInEmergency();
        assertThat(inf.klcCount(0)).as("the inference hook reported its launch cycles").isGreaterThan(100);
        long request = (long) (0.40 * params.maxTokens());
        // An emergency holds training at most at its request at once, and below it once the stretched cycle is
        // counted (a period may see the emergency before the cycle that shrinks it: then exactly the request), never
        // below what the inference's limit leaves of the GPU.
        long room = (long) Math.floor((1 - INFERENCE_LIMIT) * params.maxTokens());
        assertThat(trainingTokensInEmergency).as("training shrinks while inference is hurt")
                .isNotEmpty().allMatch(t -> t <= request, "at most its request")
                .anyMatch(t -> t < request)
                .allMatch(t -> t >= room - 1, "but keeps what the inference's limit leaves");
    }

    /** One play of the scenario: the inference's block, training's tokens in each emergency, the periods by state. */
    private record Play(ControlBlock inference, List<Long> trainingTokensInEmergency, long emergencies,
            long contention) {}

    private Play play(TokenParameters params, Path dir) throws Exception {
        ControlBlock inf = ControlBlock.create(dir.resolve("inference"), 1);
        ControlBlock train = ControlBlock.create(dir.resolve("training"), 1);
        for (ControlBlock b : List.of(inf, train)) { // as the agent does at Allocate, before the first period
            b.setMemoryLimit(0, 1024L << 20);
            b.heartbeat(System.nanoTime());
        }
        Path gpu = Files.createDirectories(dir.resolve("gpu"));
        // Steady requests: every batch runs while the training loop keeps the GPU busy.
        StringBuilder arrivals = new StringBuilder();
        for (int i = 0; i < 400; i++) {
            arrivals.append(String.format(Locale.ROOT, "%.4f%n", 0.2 + i * 0.01));
        }
        Path arrivalFile = Files.writeString(dir.resolve("arrivals.txt"), arrivals);
        List<Long> trainingTokensInEmergency = new ArrayList<>();
        try (TokenManager manager = new TokenManager(1, params, ColocationBench.shippedRefillSteps(), InstantSource.system(), 1024)) {
            // An inference limit of 90% leaves training 10% of the GPU: room to shrink below its 40% request.
            manager.gpu(0).add(new Tenant("inference", inf, 0, 0.30, INFERENCE_LIMIT, true));
            manager.gpu(0).add(new Tenant("training", train, 0, 0.40, 0.80, false));
            manager.start();
            Process training = start(train, gpu, NATIVE.resolve("bin/emu-train").toString(), "--seconds", "5",
                    "--kernels", "8", "--blocks", "432", "--block-us", "100", "--gap-ms", "1");
            Process inference = start(inf, gpu, NATIVE.resolve("bin/emu-infer").toString(), "--arrivals",
                    arrivalFile.toString(), "--batch", "8", "--max-wait-ms", "4", "--kernels", "20", "--blocks", "108",
                    "--block-us", "100");
            GrantLead lead = new GrantLead();
            while (inference.isAlive() || training.isAlive()) {
                TokenPlan plan = manager.gpu(0).lastPlan();
                if (plan != null && plan.state() == ControllerState.EMERGENCY) {
                    trainingTokensInEmergency.add(plan.tokensOf("training"));
                }
                lead.sample(train, 0);
                Thread.sleep(2);
            }
            // A grant shrinks when the controller shrinks it; what the hook admitted under the previous period's
            // grant stays admitted and is paid back, so the lead is at most one period at the limit and the kernel
            // that waits — plus what the hook lent itself while a busy machine made the agent late.
            long period = (long) (0.80 * params.maxTokens());
            long lent = GrantLead.lendable(manager, params.period(), period);
            assertThat(lead.worst()).as("training never runs ahead of its grant by more than a period (lent: %d)", lent)
                    .isLessThanOrEqualTo(period + 432 + lent);
            assertThat(inference.waitFor(60, TimeUnit.SECONDS) && training.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(inference.exitValue()).isZero();
            assertThat(training.exitValue()).isZero();
            long emergencies = manager.gpu(0).periods(ControllerState.EMERGENCY);
            long contention = manager.gpu(0).periods(ControllerState.CONTENTION);
            return new Play(inf, trainingTokensInEmergency, emergencies, contention);
        }
    }

    private Process start(ControlBlock block, Path gpu, String... command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(TestingContainers.contained(NATIVE, block, List.of(command)))
                .redirectOutput(block.directory().resolveSibling(block.directory().getFileName() + ".out").toFile())
                .redirectError(block.directory().resolveSibling(block.directory().getFileName() + ".err").toFile());
        pb.environment().put("DILU_EMU_DIR", gpu.toString());
        return pb.start();
    }
}
