package io.dilu.simulator;

import io.dilu.core.tokens.InstanceSample;
import io.dilu.core.tokens.TokenController;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.core.tokens.TokenPlan;
import io.dilu.simulator.bench.FirstTokenController;
import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Times one token period of a node: Algorithm 2 for every GPU, each shared by many instances, fed with
 * pre-generated samples (bursty launches, occasional stretched launch cycles) so that only the decision is
 * measured. Reports the median over many periods after warm-up, beside the same periods of {@link
 * FirstTokenController} (the controller as first written, 6.81 µs on 2026-11-22) timed alternately in the same run,
 * and fails when today's takes more than {@link #RATIO_BAR}× that reference. With the simulator's tests, as the frozen
 * controller it times against.
 */
@Command(name = "dilu bench tokens", mixinStandardHelpOptions = true,
        description = "Time one token period (Algorithm 2) for every GPU of a node.")
public final class TokenBench implements Callable<Integer> {

    /**
     * Today's period may take at most this many times the first controller's in the same run: the bar of issue 2
     * (at most 50 µs per node period) on the machine where the first controller took 6.81 µs, so that it scales
     * with the machine instead of depending on it.
     */
    public static final double RATIO_BAR = 50 / 6.81;

    @Option(names = "--gpus", defaultValue = "8") int gpus;
    @Option(names = "--instances-per-gpu", defaultValue = "16") int perGpu;
    @Option(names = "--periods", defaultValue = "200000") int periods;
    @Option(names = "--seed", defaultValue = "7") long seed;
    @Option(names = "--smoke", description = "CI's size: 20,000 periods") boolean smoke;

    /** {@code ./dilu bench tokens}. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new TokenBench()).execute(args));
    }

    @Override
    public Integer call() {
        return run(System.out, gpus, perGpu, smoke ? 20_000 : periods, seed, !smoke);
    }

    /** Returns 0, or 1 when {@code judge} and today's period takes more than {@link #RATIO_BAR}× the reference's. */
    public static int run(PrintStream out, int gpus, int perGpu, int periods, long seed, boolean judge) {
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
        FirstTokenController[] first = new FirstTokenController[gpus];
        for (int g = 0; g < gpus; g++) {
            controllers[g] = new TokenController(params);
            first[g] = new FirstTokenController(params);
        }
        Instant now = Instant.EPOCH;
        long checksum = 0;
        int warmup = periods / 2;
        long[] nanos = new long[periods];
        long[] referenceNanos = new long[periods];
        for (int p = 0; p < warmup + periods; p++) {
            now = now.plus(params.period());
            List<List<InstanceSample>> node = samples.get(p % distinct);
            // The reference and today's alternate period by period, so both see the same machine.
            long start = System.nanoTime();
            for (int g = 0; g < gpus; g++) {
                checksum += first[g].issue(now, node.get(g)).length;
            }
            long middle = System.nanoTime();
            for (int g = 0; g < gpus; g++) {
                TokenPlan plan = controllers[g].issue(now, node.get(g));
                checksum += plan.grants().size();
            }
            long end = System.nanoTime();
            if (p >= warmup) {
                referenceNanos[p - warmup] = middle - start;
                nanos[p - warmup] = end - middle;
            }
        }
        if (checksum != 2L * (warmup + periods) * gpus * perGpu) {
            throw new IllegalStateException("a controller lost an instance");
        }
        Arrays.sort(nanos);
        Arrays.sort(referenceNanos);
        double median = nanos[periods / 2] / 1000.0;
        double p99 = nanos[(int) (periods * 0.99)] / 1000.0;
        double reference = referenceNanos[periods / 2] / 1000.0;
        double ratio = median / reference;
        out.printf("token issuing for %d GPUs × %d instances, %d periods after %d warm-up: median %.2f µs, p99 %.2f µs per period (period %d ms)%n",
                gpus, perGpu, periods, warmup, median, p99, params.period().toMillis());
        out.printf("  the controller as first written (87afa21), alternated in the same run: median %.2f µs; today / first "
                + "%.2f (bar: at most %.2f%s)%n", reference, ratio, RATIO_BAR, judge ? "" : "; not judged in a smoke run");
        boolean slow = judge && ratio > RATIO_BAR;
        if (slow) {
            out.printf("FAIL: today's period takes %.2f× the first controller's in this run, more than %.2f×%n", ratio,
                    RATIO_BAR);
        }
        out.printf("BENCH tokens gpus=%d instances_per_gpu=%d micros_per_period=%.2f ref_micros_per_period=%.2f ratio=%.2f%n",
                gpus, perGpu, median, reference, ratio);
        return slow ? 1 : 0;
    }
}
