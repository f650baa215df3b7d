package io.dilu.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/** A clock that moves only when a test says so. */
public final class TestingClock implements InstantSource {

    private volatile Instant now;

    public TestingClock(Instant start) {
        this.now = start;
    }

    @Override
    public Instant instant() {
        return now;
    }

    public synchronized void advance(Duration by) {
        now = now.plus(by);
    }
}
