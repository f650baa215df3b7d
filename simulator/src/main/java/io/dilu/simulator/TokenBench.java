package io.dilu.simulator;

import io.dilu.core.tokens.InstanceSample;
import io.dilu.core.tokens.TokenController;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.core.tokens.TokenPlan;
import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Times one token period of a node: Algorithm 2 for every GPU, each shared by many instances, fed with
 * pre-generated samples (bursty launches, occasional stretched launch cycles) so that only the decision is
 * measured. Reports the median over many periods after warm-up.
 */
public final class TokenBench {

    private TokenBench() {}

    public static void run(PrintStream out, int gpus, int perGpu, int periods, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        TokenParameters params = TokenParameters.DEFAULTS;
        int distinct = 512; // sample sets cycled through
        List<List<List<InstanceSample>>> samples = new ArrayList<>(distinct);
        for (int p = 0; p < distinct; p++) {
            List<List<InstanceSample>> node = new ArrayList<>(gpus);
            for (int g = 0; g < gpus; g++) {
                List<InstanceSample> gpu = new ArrayList<>(perGpu);
                for (int i = 0; i < perGpu; i++) {
                    boolean slo = i % 2 == 0;
                    double request = 1.0 / perGpu;
                    long blocks = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(1, 2_000);
                    double klc = slo && rnd.nextInt(8) == 0 ? 10 + rnd.nextDouble() * (rnd.nextInt(10) == 0 ? 40 : 5)
                            : Double.NaN;
                    gpu.add(new InstanceSample("gpu" + g + "-c" + i, slo, request, Math.min(1, 2 * request), blocks, klc));
                }
                node.add(gpu);
            }
            samples.add(node);
        }
        TokenController[] controllers = new TokenController[gpus];
        for (int g = 0; g < gpus; g++) {
            controllers[g] = new TokenController(params);
        }
        Instant now = Instant.EPOCH;
        long checksum = 0;
        int warmup = periods / 2;
        long[] nanos = new long[periods];
        for (int p = 0; p < warmup + periods; p++) {
            now = now.plus(params.period());
            List<List<InstanceSample>> node = samples.get(p % distinct);
            long start = System.nanoTime();
            for (int g = 0; g < gpus; g++) {
                TokenPlan plan = controllers[g].issue(now, node.get(g));
                checksum += plan.grants().size();
            }
            long elapsed = System.nanoTime() - start;
            if (p >= warmup) {
                nanos[p - warmup] = elapsed;
            }
        }
        if (checksum != (long) (warmup + periods) * gpus * perGpu) {
            throw new IllegalStateException("a controller lost an instance");
        }
        Arrays.sort(nanos);
        double median = nanos[periods / 2] / 1000.0;
        double p99 = nanos[(int) (periods * 0.99)] / 1000.0;
        out.printf("token issuing for %d GPUs × %d instances, %d periods after %d warm-up: median %.2f µs, p99 %.2f µs per period (period %d ms)%n",
                gpus, perGpu, periods, warmup, median, p99, params.period().toMillis());
        out.printf("BENCH tokens gpus=%d instances_per_gpu=%d micros_per_period=%.2f%n", gpus, perGpu, median);
    }
}
