package io.dilu.deviceplugin.tokens;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.tokens.TokenParameters;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.Test;

/** The token threads' lateness record, read while they tick. */
class TokenManagerTest {

    /** Periods far shorter than the agent's, so that the GPUs' threads tick thousands of times during the test. */
    private static final TokenParameters FAST = new TokenParameters(10_000, 1.6, 1.3, Duration.ofMillis(1), 10, 0.05,
            Duration.ofSeconds(30));
    private static final int GPUS = 8;

    @Test
    void lateness_readWhileEveryGpuTicks_isAlwaysOneSortedSnapshotThatOnlyGrows() throws Exception {
        // Room for every tick of the test: the record grows during every read (a full ring's size no longer moves).
        int samples = 1 << 16;
        try (TokenManager manager = new TokenManager(GPUS, FAST, 1, InstantSource.system(), samples)) {
            manager.start();
            int previous = 0;
            int reads = 0;
            // Until the threads have ticked a few hundred times each: every read overlapped ticking.
            while (previous < GPUS * 300) {
                long[] late = manager.sortedLateness();
                reads++;

                assertThat(late.length).isBetween(previous, GPUS * samples);
                assertThat(sorted(late)).as("read %d sorted", reads).isTrue();
                previous = late.length;
            }
            assertThat(reads).as("reads while ticking").isGreaterThan(1);
        }
    }

    private static boolean sorted(long[] values) {
        for (int i = 1; i < values.length; i++) {
            if (values[i] < values[i - 1]) {
                return false;
            }
        }
        return true;
    }

    @Test
    void lateness_onceTheRingIsFull_keepsItsSizeAsTheThreadsGoOnTicking() throws Exception {
        int samples = 4;
        try (TokenManager manager = new TokenManager(GPUS, FAST, 1, InstantSource.system(), samples)) {
            manager.start();
            long[] late;
            do {
                late = manager.sortedLateness();
            } while (late.length < GPUS * samples);
            for (int read = 0; read < 500; read++) {
                assertThat(manager.sortedLateness()).hasSize(GPUS * samples);
            }
        }
    }
}
