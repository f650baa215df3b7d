package io.dilu.core.profiling;

/**
 * What one trial measured.
 *
 * @param latencyMillis execution time of one batch (inference) or one iteration (training)
 * @param throughput requests per second (inference) or samples per second (training)
 */
public record Measurement(double latencyMillis, double throughput) {

    public Measurement {
        if (!(latencyMillis >= 0) || !(throughput >= 0)) {
            throw new IllegalArgumentException(
                    "latencyMillis and throughput must be finite and >= 0, got " + latencyMillis + ", " + throughput);
        }
    }
}
