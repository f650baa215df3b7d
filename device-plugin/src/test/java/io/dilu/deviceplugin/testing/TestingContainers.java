package io.dilu.deviceplugin.testing;

import io.dilu.deviceplugin.control.ControlBlock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * Commands that run a program the way the kubelet runs a GPU container with a share: through
 * {@code dilu-contain} (hook-native/tools), which mounts the control block where the hook looks for it (the
 * grant page read-only) and puts the hook in /etc/ld.so.preload, in a mount namespace of the program's own.
 */
public final class TestingContainers {

    private TestingContainers() {}

    /**
     * Skips the calling test unless it runs as root: not as root, dilu-contain puts the program in a user namespace
     * of its own, where the hook refuses CUDA (hook-native/docs/hook.md, "User namespaces").
     */
    public static void assumeRoot() throws IOException {
        Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        Assumptions.assumeTrue(Integer.valueOf(0).equals(uid),
                "CUDA under the hook needs root here: as uid " + uid + ", dilu-contain runs the program in a user "
                        + "namespace of its own, where the hook refuses CUDA");
    }

    /** The native build: the hook, the emulated driver, the workloads and dilu-contain. */
    public static Path nativeDir() {
        return Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));
    }

    /** {@code command} in a container whose control block is {@code block}. */
    public static List<String> contained(Path nativeDir, ControlBlock block, List<String> command) {
        return contained(nativeDir, block.directory(), command);
    }

    /**
     * {@code command} in a container whose control block is {@code block}, with {@code neighbours} mounted read-only
     * where the hook finds its SLO neighbours' cycle pages, as Allocate mounts the GPU's.
     */
    public static List<String> contained(Path nativeDir, ControlBlock block, Path neighbours, List<String> command) {
        List<String> all = new ArrayList<>(contained(nativeDir, block.directory(), List.of()));
        all.addAll(all.indexOf("--"), List.of("--neighbours", neighbours.toString()));
        all.addAll(command);
        return all;
    }

    /** {@code command} in a container whose control block's pages are the files in {@code controlDir}. */
    public static List<String> contained(Path nativeDir, Path controlDir, List<String> command) {
        List<String> all = new ArrayList<>(List.of(nativeDir.resolve("bin/dilu-contain").toString(), "--control",
                controlDir.toString(), "--preload", nativeDir.resolve("hook/libdilu-hook.so").toString(), "--"));
        all.addAll(command);
        return all;
    }
}
