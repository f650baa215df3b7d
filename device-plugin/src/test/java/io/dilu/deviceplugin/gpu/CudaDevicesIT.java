package io.dilu.deviceplugin.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SM count read through the CUDA driver API, from a real libcuda.so.1 (the emulated one) loaded by JNA in
 * a JVM of its own, so the emulated GPU can be given 132 SMs without touching this JVM's environment.
 */
class CudaDevicesIT {

    private static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake"));

    /** Run in the child JVM: prints what {@link CudaDevices} read. */
    public static void main(String[] args) {
        CudaDevices.smCounts(args[0]).forEach((uuid, sms) -> System.out.println(uuid + "=" + sms));
    }

    @TempDir
    Path tmp;

    @Test
    void readsEachGpusMultiprocessorCountFromTheDriver() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                CudaDevicesIT.class.getName(), NATIVE.resolve("emu/libcuda.so.1").toAbsolutePath().toString());
        pb.environment().put("DILU_EMU_DIR", tmp.toString());
        pb.environment().put("DILU_EMU_GPUS", "2");
        pb.environment().put("DILU_EMU_SMS", "132");
        Path out = tmp.resolve("out.txt");
        Process p = pb.redirectOutput(out.toFile()).redirectError(tmp.resolve("err.txt").toFile()).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8).stream().sorted().toList();
        assertThat(lines).as(Files.readString(tmp.resolve("err.txt"))).containsExactly(
                "GPU-64696c75-2d65-6d75-0000-000000000000=132", "GPU-64696c75-2d65-6d75-0000-000001000000=132");
    }

    @Test
    void withoutADriverThereAreNoCounts() {
        assertThat(CudaDevices.smCounts(tmp.resolve("no-such-libcuda.so").toString())).isEmpty();
    }
}
