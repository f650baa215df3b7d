package io.dilu.cli;

import io.dilu.trials.EmulatedModel;
import io.dilu.trials.EmulatedModels;
import io.dilu.trials.LocalProfiling;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** What {@code profile --local} and {@code bench profiling} share: the models chosen, the native build checked. */
final class LocalCommand {

    private LocalCommand() {}

    /** {@code -Ddilu.native.dir}, else hook-native/target/cmake from the repository's root, where ./dilu runs. */
    static Path defaultNativeDir() {
        return Path.of(System.getProperty("dilu.native.dir", "hook-native/target/cmake"));
    }

    /**
     * Profiles the named models (all when none) by trials on the emulated GPU, writing each one's GpuFunctionProfile
     * into {@code profiles} when given; 2 after saying why it cannot.
     */
    static int run(PrintWriter out, PrintWriter err, Path nativeDir, List<String> names, Path profiles) {
        List<EmulatedModel> chosen = new ArrayList<>();
        for (String name : names) {
            var m = EmulatedModels.named(name);
            if (m.isEmpty()) {
                err.println("--model must be one of " + String.join(", ", EmulatedModels.names()) + ", got '" + name + "'");
                return 2;
            }
            if (!chosen.contains(m.get())) {
                chosen.add(m.get());
            }
        }
        if (chosen.isEmpty()) {
            chosen.addAll(EmulatedModels.ALL);
        }
        if (profiles != null && Files.exists(profiles) && !Files.isDirectory(profiles)) {
            err.println("--out " + profiles + " is a file, not a directory");
            return 2;
        }
        for (String binary : List.of("bin/emu-infer", "bin/emu-train")) {
            if (!Files.isExecutable(nativeDir.resolve(binary))) {
                err.println("the emulated GPU's workloads are not built: no " + nativeDir.resolve(binary) + " (./dilu profile "
                        + "--local builds them; or cmake -S hook-native -B hook-native/target/cmake && cmake --build "
                        + "hook-native/target/cmake; --native DIR names another build)");
                return 2;
            }
        }
        out.println("Profiling by trials on the emulated GPU (every figure below is emulated, not a GPU measurement): "
                + LocalProfiling.TRIAL_BATCHES + " timed batches per inference trial, " + LocalProfiling.TRAINING_ITERATIONS
                + " timed iterations per training trial, each after one untimed");
        try {
            new LocalProfiling(out, LocalProfiling.processes(nativeDir.toAbsolutePath())).run(chosen, profiles);
        } catch (IOException e) {
            err.println("--out " + profiles + ": " + e);
            return 2;
        }
        return 0;
    }
}
