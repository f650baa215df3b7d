package io.dilu.trials;

import io.dilu.core.profiling.TrialReport;
import java.util.List;

/**
 * The emulated GPU's arithmetic for one of the catalogue's models, without running it: under the emulator's
 * fifo model a process alone on the GPU with an MPS share of p runs each kernel of B blocks of U µs in
 * ⌈B / ⌈p % × 108⌉⌉ waves of U (hook-native/docs/emulated-gpu.md), and a batch of n requests launches kernels of
 * ⌈blocks + X·(n − 1)⌉ blocks. Memory beyond the 40 GiB fails the trial as cuMemAlloc does. ProcessTrialIT holds
 * the real workloads to these times.
 */
public final class TestingEmulatedGpu implements ReportingTrial {

    static final int SMS = 108;
    static final long MEMORY_MIB = 40960;

    private final EmulatedModel model;

    public TestingEmulatedGpu(EmulatedModel model) {
        this.model = model;
    }

    private double arg(String name, double otherwise) {
        List<String> a = model.arguments();
        int i = a.indexOf(name);
        return i < 0 ? otherwise : Double.parseDouble(a.get(i + 1));
    }

    static int sms(int percent) {
        return (int) Math.ceil(percent * SMS / 100.0 - 1e-9);
    }

    /** One batch's (or, without the gap, one iteration's) time in seconds. */
    double computeSeconds(int percent, int batch) {
        double blocks = Math.ceil(arg("--blocks", 108) + arg("--blocks-per-item", 0) * (batch - 1) - 1e-9);
        return arg("--kernels", 20) * Math.ceil(blocks / sms(percent)) * arg("--block-us", 50) / 1e6;
    }

    @Override
    public TrialRun attempt(int percent, int batch) {
        long memory = (long) (arg("--memory-mib", 0) + arg("--memory-per-item-mib", 0) * batch);
        if (memory > MEMORY_MIB) {
            return TrialRun.failed(percent, batch, "exited with 3: cannot allocate the model's activations: out of memory");
        }
        if (model.training()) {
            double iteration = computeSeconds(percent, 1) + arg("--gap-ms", 0) / 1000;
            return TrialRun.reported(percent, batch, new TrialReport(iteration, 1 / iteration, 0));
        }
        double latency = computeSeconds(percent, batch);
        return TrialRun.reported(percent, batch, new TrialReport(latency, batch / latency, memory));
    }
}
