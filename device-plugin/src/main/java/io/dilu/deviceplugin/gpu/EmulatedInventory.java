package io.dilu.deviceplugin.gpu;

import io.dilu.core.placement.GpuDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * GPUs described by configuration, for nodes without NVML (development, CI, the emulated GPU), e.g.
 * {@code 4x A100-40GB, 108 SMs}: a count, a model whose name ends in its memory ({@code -40GB}), and the SMs
 * per GPU, which may be left out for a model {@link GpuModels} knows. UUIDs are stable per node:
 * {@code GPU-emu-<node>-<index>}.
 */
public final class EmulatedInventory implements GpuInventory {

    private static final Pattern SPEC = Pattern.compile(
            "\\s*(\\d+)\\s*x\\s*([A-Za-z0-9._-]+?-(\\d+)GB)\\s*(?:,\\s*(\\d+)\\s*SMs?)?\\s*", Pattern.CASE_INSENSITIVE);

    private static final String FIELD = "dilu.agent.emulated-gpus";

    private final List<GpuDevice> gpus;

    private EmulatedInventory(List<GpuDevice> gpus) {
        this.gpus = List.copyOf(gpus);
    }

    /** Parses a spec; a bad one is refused with the accepted form and ranges in the message. */
    public static EmulatedInventory parse(String node, String spec) {
        Matcher m = SPEC.matcher(spec == null ? "" : spec);
        if (!m.matches()) {
            throw new IllegalArgumentException(FIELD + "='" + spec
                    + "' is not allowed: must look like '4x A100-40GB, 108 SMs' (count x model-<memory>GB[, SMs])");
        }
        int count = Integer.parseInt(m.group(1));
        long memoryGb = Long.parseLong(m.group(3));
        OptionalInt known = GpuModels.smCount(m.group(2));
        if (m.group(4) == null && known.isEmpty()) {
            throw new IllegalArgumentException(FIELD + "='" + spec + "' is not allowed: the SM count of " + m.group(2)
                    + " is not known; add it, e.g. '" + spec.strip() + ", 108 SMs'");
        }
        int sms = m.group(4) == null ? known.getAsInt() : Integer.parseInt(m.group(4));
        if (count < 1 || count > 64) {
            throw new IllegalArgumentException(FIELD + ": count=" + count + " is not allowed: must be in 1..64");
        }
        if (memoryGb < 1 || memoryGb > 1024) {
            throw new IllegalArgumentException(FIELD + ": memory=" + memoryGb + "GB is not allowed: must be in 1..1024 GB");
        }
        if (sms < 1 || sms > 1024) {
            throw new IllegalArgumentException(FIELD + ": SMs=" + sms + " is not allowed: must be in 1..1024");
        }
        List<GpuDevice> gpus = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            gpus.add(new GpuDevice(String.format(Locale.ROOT, GpuDevice.EMULATED_UUID_PREFIX + "%s-%d", node, i), i, m.group(2), memoryGb * 1024, sms));
        }
        return new EmulatedInventory(gpus);
    }

    @Override
    public List<GpuDevice> gpus() {
        return gpus;
    }

    @Override
    public boolean healthy(String uuid) {
        return gpus.stream().anyMatch(g -> g.uuid().equals(uuid));
    }
}
