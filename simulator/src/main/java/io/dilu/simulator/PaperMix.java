package io.dilu.simulator;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The instance mix of the paper's large-scale simulation (§5.5), seeded so every run sees the same list.
 *
 * <ul>
 *   <li>60% inference on 1 GPU: SM request uniform in [0.20, 0.40], limit = request + 0.20, memory a whole
 *       number of GB uniform in 3..10;
 *   <li>20% LLM inference on 1 GPU: request in [0.40, 0.60], limit = request + 0.20, memory 20..30 GB
 *       (whole GB); may be split into pipeline stages;
 *   <li>20% training on 2 or 4 GPUs (half each): request in [0.40, 0.80], limit = min(1.0, request + 0.20),
 *       memory per GPU uniform in [25, 40] GB.
 * </ul>
 * Each instance belongs to a function drawn uniformly from a pool per type (100 inference, 30 LLM and 40
 * training functions), which is what workload affinity keys on. Quotas are drawn per instance, as the
 * paper states its distributions per instance.
 */
public final class PaperMix {

    /**
     * The shares and memory of an instance of one serving type (§5.5): SM request uniform in [requestLow,
     * requestHigh], limit {@link #LIMIT_ABOVE_REQUEST} above it, memory a whole number of GB uniform in
     * memoryGbLow..memoryGbHigh. The co-scaling fleet ({@code coscaling.FleetFunctions}) draws its functions' shares
     * from the same shapes.
     */
    public record Shape(double requestLow, double requestHigh, int memoryGbLow, int memoryGbHigh) {}

    public static final Shape INFERENCE = new Shape(0.20, 0.40, 3, 10);
    public static final Shape LLM = new Shape(0.40, 0.60, 20, 30);
    /** A serving instance's SM limit above its request. */
    public static final double LIMIT_ABOVE_REQUEST = 0.20;

    public static final int PAPER_INSTANCES = 3_200;
    public static final long DEFAULT_SEED = 20_250_330L; // ASPLOS'25 opening day
    private static final long GB = 1024;

    private PaperMix() {}

    public static List<SimInstance> generate(int count, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<SimInstance> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            double kind = rnd.nextDouble();
            String id = "i" + i;
            if (kind < 0.6) {
                double request = uniform(rnd, INFERENCE.requestLow(), INFERENCE.requestHigh());
                out.add(new SimInstance(id, "inf-" + rnd.nextInt(100), InstanceType.INFERENCE, 1, request,
                        request + LIMIT_ABOVE_REQUEST, rnd.nextInt(INFERENCE.memoryGbLow(), INFERENCE.memoryGbHigh() + 1) * GB));
            } else if (kind < 0.8) {
                double request = uniform(rnd, LLM.requestLow(), LLM.requestHigh());
                out.add(new SimInstance(id, "llm-" + rnd.nextInt(30), InstanceType.LLM_INFERENCE, 1, request,
                        request + LIMIT_ABOVE_REQUEST, rnd.nextInt(LLM.memoryGbLow(), LLM.memoryGbHigh() + 1) * GB));
            } else {
                double request = uniform(rnd, 0.40, 0.80);
                out.add(new SimInstance(id, "train-" + rnd.nextInt(40), InstanceType.TRAINING,
                        rnd.nextBoolean() ? 2 : 4, request, Math.min(1.0, request + 0.20),
                        Math.round(uniform(rnd, 25, 40) * GB)));
            }
        }
        return out;
    }

    private static double uniform(SplittableRandom rnd, double low, double high) {
        return low + (high - low) * rnd.nextDouble();
    }
}
