package io.dilu.trials;

import io.dilu.kube.profile.ProfileSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A model run on the emulated GPU: the workload's arguments (emu-infer's or emu-train's, hook-native/workloads)
 * and, for inference, its SLO. Shapes and sources are in {@link EmulatedModels}.
 *
 * @param name what the output and the BENCH lines call it
 * @param training a training job (emu-train, profiled by SM share alone) rather than an inference function
 * @param arguments the workload's model arguments, without trial mode
 * @param sloSeconds the end-to-end latency objective of an inference function; 0 for training
 * @param basis one line on where the shape comes from
 */
public record EmulatedModel(String name, boolean training, List<String> arguments, double sloSeconds, String basis) {

    public EmulatedModel {
        arguments = List.copyOf(arguments);
        if (training ? sloSeconds != 0 : !(sloSeconds > 0)) {
            throw new IllegalArgumentException(name + ": an inference function needs an SLO > 0, a training job none");
        }
    }

    /** The image the emulated workloads ship in ({@code ./dilu images}), and where in it they are ({@code bin/emu-infer}). */
    public static final String WORKLOAD_IMAGE = "dilu.local/workload:0.1.0";
    public static final Path WORKLOAD_PREFIX = Path.of("/usr/local");

    /**
     * What the profiler is asked for on Kubernetes: a GpuFunctionProfile's spec with the workload image and this
     * model's trial command in it ({@link LocalProfiling}'s batches or iterations per trial), and its SLO.
     */
    public ProfileSpec profileSpec() {
        List<String> command = trialCommand(WORKLOAD_PREFIX, training ? LocalProfiling.TRAINING_ITERATIONS : LocalProfiling.TRIAL_BATCHES);
        return ProfileSpec.toProfile(name, training ? "training" : "inference", WORKLOAD_IMAGE, command,
                training ? null : (int) Math.round(sloSeconds * 1000), null);
    }

    /** The command of one trial: the workload, the model's arguments, and trial mode over {@code runs} batches or iterations. */
    public List<String> trialCommand(Path nativeDir, int runs) {
        if (runs < 1) {
            throw new IllegalArgumentException("runs must be at least 1, got " + runs);
        }
        List<String> all = new ArrayList<>();
        all.add(nativeDir.resolve(training ? "bin/emu-train" : "bin/emu-infer").toString());
        all.addAll(arguments);
        all.addAll(training ? List.of("--trial", "--iterations", Integer.toString(runs))
                : List.of("--trial-batches", Integer.toString(runs)));
        return all;
    }
}
