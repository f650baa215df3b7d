package io.dilu.autoscaler.activator;

import io.dilu.core.contract.KnativeNames;
import java.time.Duration;

/** {@link ActivatorConfig} as plain values, for tests that build the server without Quarkus. */
record TestingActivatorConfig(int maxFrameBytes, int maxMessagesPerFrame, double maxValue, Duration freshness,
        Duration maxAge, int maxActivatorsPerRevision, int maxConnections, int refusedFramesBeforeClose, int port,
        Authentication authentication, String podLabel, int maxFramesPerSecond, int maxBytesPerSecond,
        double maxRevisionConcurrency, double maxRevisionRps) implements ActivatorConfig {

    /** The documented defaults. */
    static TestingActivatorConfig defaults() {
        return new TestingActivatorConfig(1_048_576, 10_000, 1e6, Duration.ofSeconds(3), Duration.ofSeconds(60), 32, 64, 10,
                8080, Authentication.ACTIVATOR_POD, KnativeNames.ACTIVATOR_POD_LABEL, 100, 4_194_304, 10_000, 100_000);
    }

    TestingActivatorConfig withConnections(int maxConnections, int refusedFramesBeforeClose) {
        return new TestingActivatorConfig(maxFrameBytes, maxMessagesPerFrame, maxValue, freshness, maxAge, maxActivatorsPerRevision,
                maxConnections, refusedFramesBeforeClose, port, authentication, podLabel, maxFramesPerSecond, maxBytesPerSecond,
                maxRevisionConcurrency, maxRevisionRps);
    }

    TestingActivatorConfig withMaxAge(Duration maxAge) {
        return new TestingActivatorConfig(maxFrameBytes, maxMessagesPerFrame, maxValue, freshness, maxAge, maxActivatorsPerRevision,
                maxConnections, refusedFramesBeforeClose, port, authentication, podLabel, maxFramesPerSecond, maxBytesPerSecond,
                maxRevisionConcurrency, maxRevisionRps);
    }

    TestingActivatorConfig withRates(int maxFramesPerSecond, int maxBytesPerSecond) {
        return new TestingActivatorConfig(maxFrameBytes, maxMessagesPerFrame, maxValue, freshness, maxAge, maxActivatorsPerRevision,
                maxConnections, refusedFramesBeforeClose, port, authentication, podLabel, maxFramesPerSecond, maxBytesPerSecond,
                maxRevisionConcurrency, maxRevisionRps);
    }
}
