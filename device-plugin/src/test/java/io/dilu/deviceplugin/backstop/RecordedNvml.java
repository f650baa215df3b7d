package io.dilu.deviceplugin.backstop;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NVML as an H100 answered it, replayed: the per-process memory and utilisation samples {@code dilu-nvml-probe} read on
 * an NVIDIA H100 80GB HBM3 (driver 580.159.04, no MPS; {@value #RECORDING} in docs/gpu/), handed out through the calls
 * {@link NvmlProcesses} makes, so that the real reader and the real backstop judge them. Each of the test's processes
 * is given one of the recording's roles and answers as that role did: its {@code MEMORY} line for its memory, its
 * {@code SAMPLE} lines for its utilisation, in their recorded spacing from the role's first sample, repeated for as
 * long as the test runs (a role with a single sample, one that ran no kernels, gives it once). A process that has
 * ended drops out of the process list, as the driver drops a process whose context is gone.
 *
 * <p>Time is the test's clock ({@link InstantSource}): a sample is handed out once the clock has passed its recorded
 * offset from the replay's start, so a test advancing its clock a second a round reads a second of the recording a
 * round, without waiting.
 */
public final class RecordedNvml implements NvmlProcesses.Calls {

    /** The recording, in the repository's docs/gpu/. */
    public static final String RECORDING = "h100-nvml-backstop-2026-11-26.txt";
    private static final int SUCCESS = 0;
    private static final int NOT_FOUND = 6;
    private static final int INSUFFICIENT_SIZE = 7;
    private static final int INFO_SIZE = 24;
    private static final int SAMPLE_SIZE = 32;
    /** NVML's per-process samples came on a 200 ms grid: the replay's loop ends one grid step after the last. */
    private static final long GRID_MICROS = 200_000;
    private static final Pattern MEMORY = Pattern.compile("^MEMORY role=(\\d) used_mib=([0-9.]+)$");
    private static final Pattern SAMPLE = Pattern.compile("^SAMPLE role=(\\d) ts=(\\d+) sm=(\\d+)$");

    /** The probe's five processes, as the recording numbers them (hook-native/tools/nvml_probe.c). */
    public enum Role {
        /** 0: a context, nothing else. */
        CONTEXT_ONLY,
        /** 1: a context and one 1024 MiB cuMemAlloc. */
        CONTEXT_AND_1024_MIB,
        /** 2: one-block kernels (1 of 132 SMs) spinning 2 ms each, back to back. */
        NARROW_KERNELS,
        /** 3: kernels of 528 blocks (4 per SM) spinning 2 ms, back to back. */
        WIDE_KERNELS,
        /** 4: as 3, but 2 ms of kernel then 6 ms of rest. */
        WIDE_KERNELS_QUARTER_TIME
    }

    private record Sampled(long offsetMicros, int smUtil) {}

    private final Map<Role, Long> memoryBytes = new EnumMap<>(Role.class);
    private final Map<Role, List<Sampled>> samples = new EnumMap<>(Role.class);
    /** Per role, the recorded span of its samples and one grid step: its loop; 0 for one sample, given once. */
    private final Map<Role, Long> periodMicros = new EnumMap<>(Role.class);
    private final InstantSource clock;
    private final long originMicros;
    private final Map<Long, Role> roles = new ConcurrentHashMap<>();

    private RecordedNvml(List<String> lines, InstantSource clock) {
        List<long[]> raw = new ArrayList<>();
        for (String line : lines) {
            Matcher m = MEMORY.matcher(line.strip());
            if (m.matches()) {
                memoryBytes.put(role(m.group(1)), Math.round(Double.parseDouble(m.group(2)) * (1 << 20)));
            }
            Matcher s = SAMPLE.matcher(line.strip());
            if (s.matches()) {
                raw.add(new long[] {role(s.group(1)).ordinal(), Long.parseLong(s.group(2)), Long.parseLong(s.group(3))});
            }
        }
        if (memoryBytes.size() != Role.values().length || raw.isEmpty()) {
            throw new IllegalStateException(RECORDING + " holds no MEMORY line for every role, or no SAMPLE line");
        }
        for (Role r : Role.values()) {
            long first = raw.stream().filter(x -> x[0] == r.ordinal()).mapToLong(x -> x[1]).min().orElse(0);
            long last = raw.stream().filter(x -> x[0] == r.ordinal()).mapToLong(x -> x[1]).max().orElse(0);
            List<Sampled> own = new ArrayList<>();
            raw.stream().filter(x -> x[0] == r.ordinal()).forEach(x -> own.add(new Sampled(x[1] - first, (int) x[2])));
            own.sort(java.util.Comparator.comparingLong(Sampled::offsetMicros));
            samples.put(r, own);
            periodMicros.put(r, own.size() < 2 ? 0 : last - first + GRID_MICROS);
        }
        this.clock = clock;
        this.originMicros = micros(clock);
    }

    private static Role role(String number) {
        int n = Integer.parseInt(number);
        if (n < 0 || n >= Role.values().length) {
            throw new IllegalStateException(RECORDING + " names a role " + n + " the probe does not have");
        }
        return Role.values()[n];
    }

    private static long micros(InstantSource clock) {
        return ChronoUnit.MICROS.between(java.time.Instant.EPOCH, clock.instant());
    }

    /** The recording, found in docs/gpu/ of the working directory or one above it; the replay starts now. */
    public static RecordedNvml load(InstantSource clock) throws IOException {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path file = dir.resolve("docs").resolve("gpu").resolve(RECORDING);
            if (Files.isRegularFile(file)) {
                return new RecordedNvml(Files.readAllLines(file), clock);
            }
        }
        throw new IOException("docs/gpu/" + RECORDING + " is not in " + Path.of("").toAbsolutePath() + " or above it");
    }

    /** From now on the process {@code pid} answers as {@code role} did. */
    public void assign(long pid, Role role) {
        roles.put(pid, role);
    }

    /** The role's GPU memory as NVML reported it, in MiB. */
    public long memoryMib(Role role) {
        return memoryBytes.get(role) >> 20;
    }

    /** The mean of the role's recorded smUtil samples, in percent. */
    public double meanSmUtil(Role role) {
        return samples.get(role).stream().mapToInt(Sampled::smUtil).average().orElse(0);
    }

    /** The real reader, over this recording, for a node of one GPU. */
    public NvmlProcesses reader() {
        return new NvmlProcesses(this, 1, g -> new Pointer(0x1000));
    }

    private List<Map.Entry<Long, Role>> live() {
        return roles.entrySet().stream()
                .filter(e -> ProcessHandle.of(e.getKey()).map(ProcessHandle::isAlive).orElse(false)).toList();
    }

    private int processes(IntByReference count, Pointer infos) {
        List<Map.Entry<Long, Role>> live = live();
        if (infos == null || count.getValue() < live.size()) {
            count.setValue(live.size());
            return INSUFFICIENT_SIZE;
        }
        for (int i = 0; i < live.size(); i++) {
            infos.setInt((long) i * INFO_SIZE, live.get(i).getKey().intValue());
            infos.setLong((long) i * INFO_SIZE + 8, memoryBytes.get(live.get(i).getValue()));
        }
        count.setValue(live.size());
        return SUCCESS;
    }

    @Override
    public int nvmlDeviceGetComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos) {
        return processes(count, infos);
    }

    @Override
    public int nvmlDeviceGetComputeRunningProcesses_v2(Pointer device, IntByReference count, Pointer infos) {
        return processes(count, infos);
    }

    @Override
    public int nvmlDeviceGetComputeRunningProcesses(Pointer device, IntByReference count, Pointer infos) {
        throw new UnsatisfiedLinkError("the recorded driver answered _v3");
    }

    @Override
    public int nvmlDeviceGetMPSComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos) {
        count.setValue(0); // no MPS in the recording
        return SUCCESS;
    }

    /** The live processes' samples stamped after {@code lastSeen} and not after now, in the recording's spacing. */
    private List<long[]> newer(long lastSeen) {
        long now = micros(clock);
        long from = Math.max(lastSeen, originMicros - 1);
        List<long[]> out = new ArrayList<>();
        for (Map.Entry<Long, Role> p : live()) {
            long period = periodMicros.get(p.getValue());
            long loops = period == 0 ? 1 : (now - originMicros) / period + 1;
            for (long loop = period == 0 ? 0 : Math.max(0, (from - originMicros) / period); loop < loops; loop++) {
                for (Sampled s : samples.get(p.getValue())) {
                    long stamp = originMicros + loop * period + s.offsetMicros();
                    if (stamp > from && stamp <= now) {
                        out.add(new long[] {p.getKey(), stamp, s.smUtil()});
                    }
                }
            }
        }
        return out;
    }

    @Override
    public int nvmlDeviceGetProcessUtilization(Pointer device, Pointer out, IntByReference count, long lastSeen) {
        List<long[]> newer = newer(lastSeen);
        if (newer.isEmpty()) {
            return NOT_FOUND;
        }
        if (out == null || count.getValue() < newer.size()) {
            count.setValue(newer.size());
            return INSUFFICIENT_SIZE;
        }
        for (int i = 0; i < newer.size(); i++) {
            out.setInt((long) i * SAMPLE_SIZE, (int) newer.get(i)[0]);
            out.setLong((long) i * SAMPLE_SIZE + 8, newer.get(i)[1]);
            out.setInt((long) i * SAMPLE_SIZE + 16, (int) newer.get(i)[2]);
        }
        count.setValue(newer.size());
        return SUCCESS;
    }
}
