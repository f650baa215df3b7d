package io.dilu.core.quota;

import java.util.Arrays;
import java.util.Optional;

/** How an instance is treated under contention: SLO-sensitive inference first, best-effort yields. */
public enum Priority {
    SLO("slo"),
    BEST_EFFORT("best-effort");

    private final String label;

    Priority(String label) {
        this.label = label;
    }

    /** The spelling used in annotations and CRDs. */
    public String label() {
        return label;
    }

    public static Optional<Priority> fromLabel(String label) {
        return Arrays.stream(values()).filter(p -> p.label.equals(label)).findFirst();
    }
}
