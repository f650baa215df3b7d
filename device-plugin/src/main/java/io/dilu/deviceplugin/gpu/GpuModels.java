package io.dilu.deviceplugin.gpu;

import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;

/**
 * SM counts of common data-centre GPUs, from NVIDIA's published specifications (architecture whitepapers and
 * product briefs), for emulated GPUs described by model name only. Real GPUs are never looked up here: their
 * count comes from the driver.
 */
public final class GpuModels {

    private GpuModels() {}

    /** Model name prefix → SMs. Longer names first, so "H100-PCIE" wins over "H100". */
    private static final Map<String, Integer> SMS = Map.ofEntries(
            Map.entry("A100", 108), Map.entry("A30", 56), Map.entry("A10", 72), Map.entry("H100-PCIE", 114),
            Map.entry("H100", 132), Map.entry("H200", 132), Map.entry("B200", 148), Map.entry("L40S", 142),
            Map.entry("L4", 58), Map.entry("T4", 40), Map.entry("V100", 80));

    /** The SMs of a model named like {@code A100-40GB} or {@code H100-PCIE-80GB}, when the table knows it. */
    public static OptionalInt smCount(String model) {
        String m = model.toUpperCase(Locale.ROOT);
        return SMS.entrySet().stream()
                .filter(e -> m.equals(e.getKey()) || m.startsWith(e.getKey() + "-"))
                .sorted((a, b) -> b.getKey().length() - a.getKey().length())
                .mapToInt(Map.Entry::getValue).findFirst();
    }
}
