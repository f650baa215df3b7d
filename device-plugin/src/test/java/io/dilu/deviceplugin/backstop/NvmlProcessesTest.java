package io.dilu.deviceplugin.backstop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import io.dilu.core.backstop.ShareBackstop;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How the NVML reader handles what drivers answer: older entry points, absent ones, buffers too small, values NVML
 * does not have, utilisation samples. The structures' layouts (24-byte process infos, 32-byte samples) are those the
 * H100 measurement read correctly (docs/gpu/h100-nvml-backstop-2026-11-26.txt); here NVML is a stand-in that writes
 * them as the reference documents.
 */
class NvmlProcessesTest {

    private static final int NOT_FOUND = 6;
    private static final int INSUFFICIENT_SIZE = 7;
    private static final int NOT_SUPPORTED = 3;

    /** A driver: its processes (pid → bytes), its samples (pid, µs, smUtil) and which calls it lacks. */
    private static final class FakeNvml implements NvmlProcesses.Calls {
        Map<Long, Long> processes = Map.of();
        List<long[]> samples = new ArrayList<>();
        boolean hasV3 = true;
        boolean hasMps = true;
        int utilisationError = 0;
        int listError = 0;
        int calls;

        private int write(IntByReference count, Pointer infos, int size) {
            calls++;
            if (listError != 0) {
                return listError;
            }
            if (infos == null || count.getValue() < processes.size()) {
                count.setValue(processes.size());
                return INSUFFICIENT_SIZE;
            }
            int i = 0;
            for (Map.Entry<Long, Long> p : processes.entrySet()) {
                infos.setInt((long) i * size, p.getKey().intValue());
                infos.setLong((long) i * size + 8, p.getValue());
                i++;
            }
            count.setValue(processes.size());
            return 0;
        }

        @Override
        public int nvmlDeviceGetComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos) {
            if (!hasV3) {
                throw new UnsatisfiedLinkError("nvmlDeviceGetComputeRunningProcesses_v3");
            }
            return write(count, infos, 24);
        }

        @Override
        public int nvmlDeviceGetComputeRunningProcesses_v2(Pointer device, IntByReference count, Pointer infos) {
            return write(count, infos, 24);
        }

        @Override
        public int nvmlDeviceGetComputeRunningProcesses(Pointer device, IntByReference count, Pointer infos) {
            return write(count, infos, 16);
        }

        @Override
        public int nvmlDeviceGetMPSComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos) {
            if (!hasMps) {
                throw new UnsatisfiedLinkError("nvmlDeviceGetMPSComputeRunningProcesses_v3");
            }
            count.setValue(0);
            return 0;
        }

        @Override
        public int nvmlDeviceGetProcessUtilization(Pointer device, Pointer out, IntByReference count, long lastSeen) {
            if (utilisationError != 0) {
                return utilisationError;
            }
            List<long[]> newer = samples.stream().filter(s -> s[1] > lastSeen).toList();
            if (newer.isEmpty()) {
                return NOT_FOUND;
            }
            if (out == null || count.getValue() < newer.size()) {
                count.setValue(newer.size());
                return INSUFFICIENT_SIZE;
            }
            for (int i = 0; i < newer.size(); i++) {
                out.setInt(i * 32L, (int) newer.get(i)[0]);
                out.setLong(i * 32L + 8, newer.get(i)[1]);
                out.setInt(i * 32L + 16, (int) newer.get(i)[2]);
            }
            count.setValue(newer.size());
            return 0;
        }
    }

    private static NvmlProcesses reader(FakeNvml nvml) {
        return new NvmlProcesses(nvml, 1, g -> new Pointer(0x1000));
    }

    @Test
    void memoryPerProcessAndSharesOfTimeSinceTheLastRead() throws Exception {
        FakeNvml nvml = new FakeNvml();
        nvml.processes = Map.of(100L, 1542L << 20, 200L, -1L);
        nvml.samples.add(new long[] {100, 1_000, 99}); // in the driver's buffer before the agent's first read
        NvmlProcesses reader = reader(nvml);
        assertThat(reader.measure()).isEqualTo(ShareBackstop.Measure.TIME_SHARE);

        List<GpuProcesses.Use> first = reader.read();
        assertThat(first).extracting(GpuProcesses.Use::pid, GpuProcesses.Use::memoryBytes)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(100L, 1542L << 20),
                        org.assertj.core.groups.Tuple.tuple(200L, -1L)); // NVML_VALUE_NOT_AVAILABLE
        assertThat(first).allSatisfy(u -> assertThat(u.share()).as("the buffer's old samples are no interval's").isNaN());

        nvml.samples.add(new long[] {100, 2_000, 80});
        nvml.samples.add(new long[] {100, 2_200, 40});
        nvml.samples.add(new long[] {300, 2_200, 50}); // a process that ran and is gone from the list
        List<GpuProcesses.Use> second = reader.read();
        assertThat(second).filteredOn(u -> u.pid() == 100).singleElement()
                .satisfies(u -> assertThat(u.share()).isCloseTo(0.60, org.assertj.core.data.Offset.offset(1e-9)));
        assertThat(second).filteredOn(u -> u.pid() == 200).singleElement()
                .satisfies(u -> assertThat(u.share()).as("no sample: ran nothing").isZero());
        assertThat(second).filteredOn(u -> u.pid() == 300).singleElement().satisfies(u -> {
            assertThat(u.memoryBytes()).isEqualTo(-1);
            assertThat(u.share()).isEqualTo(0.5);
        });

        List<GpuProcesses.Use> third = reader.read(); // nothing new: NVML_ERROR_NOT_FOUND
        assertThat(third).allSatisfy(u -> assertThat(u.share()).isZero());
    }

    @Test
    void olderDriversAndMissingCalls() throws Exception {
        FakeNvml nvml = new FakeNvml();
        nvml.hasV3 = false;
        nvml.hasMps = false;
        nvml.utilisationError = NOT_SUPPORTED;
        nvml.processes = Map.of(7L, 5L << 20);
        NvmlProcesses reader = reader(nvml);
        assertThat(reader.read()).singleElement().satisfies(u -> {
            assertThat(u.pid()).isEqualTo(7);
            assertThat(u.memoryBytes()).isEqualTo(5L << 20);
            assertThat(u.share()).as("no per-process utilisation: memory only").isNaN();
        });
        assertThat(reader.read()).hasSize(1);
    }

    @Test
    void theBufferGrowsWithTheProcesses() throws Exception {
        FakeNvml nvml = new FakeNvml();
        Map<Long, Long> many = new java.util.HashMap<>();
        for (long p = 1; p <= 150; p++) {
            many.put(p, p << 20);
        }
        nvml.processes = many;
        assertThat(reader(nvml).read()).hasSize(150);
    }

    @Test
    void aGpuThatCannotBeReadFailsTheRound() {
        FakeNvml nvml = new FakeNvml();
        nvml.listError = 15; // NVML_ERROR_GPU_IS_LOST
        assertThatThrownBy(() -> reader(nvml).read()).isInstanceOf(GpuProcesses.ReadFailure.class)
                .hasMessageContaining("NVML error 15");
    }
}
