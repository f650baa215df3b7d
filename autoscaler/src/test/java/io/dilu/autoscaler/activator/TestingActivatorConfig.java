package io.dilu.autoscaler.activator;

import java.time.Duration;

/** {@link ActivatorConfig} as plain values, for tests that build the server without Quarkus. */
record TestingActivatorConfig(int maxFrameBytes, int maxMessagesPerFrame, double maxValue, Duration freshness,
        Duration maxAge, int maxActivatorsPerRevision, int maxConnections, int refusedFramesBeforeClose)
        implements ActivatorConfig {

    /** The documented defaults. */
    static TestingActivatorConfig defaults() {
        return new TestingActivatorConfig(1_048_576, 10_000, 1e6, Duration.ofSeconds(3), Duration.ofSeconds(60), 32, 64, 10);
    }
}
