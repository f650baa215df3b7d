package io.dilu.core.profiling;

import java.util.HashMap;
import java.util.Map;

/**
 * Remembers every setting already tried so that a search never pays twice for the same trial, and
 * counts the distinct trials run: the cost a profiling method is judged by.
 */
public final class CountingTrial implements Trial {

    private record Setting(int smPercent, int batchSize) {}

    private final Trial delegate;
    private final Map<Setting, Measurement> seen = new HashMap<>();

    public CountingTrial(Trial delegate) {
        this.delegate = delegate;
    }

    @Override
    public Measurement run(int smPercent, int batchSize) {
        return seen.computeIfAbsent(new Setting(smPercent, batchSize), s -> delegate.run(s.smPercent(), s.batchSize()));
    }

    /** Distinct settings run so far. */
    public int trials() {
        return seen.size();
    }
}
