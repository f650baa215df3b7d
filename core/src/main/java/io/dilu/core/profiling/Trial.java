package io.dilu.core.profiling;

/**
 * Runs a function once at an SM share and batch size and reports what it measured. In production a
 * trial is a pre-run of the function's image (tens of seconds); in tests it is a model.
 */
@FunctionalInterface
public interface Trial {

    /**
     * @param smPercent SM share, percent of one GPU, 1..100
     * @param batchSize requests per batch (1 for training)
     */
    Measurement run(int smPercent, int batchSize);
}
