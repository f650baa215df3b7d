package io.dilu.simulator;

import java.util.Arrays;
import java.util.Optional;

/** The three kinds of instance in the paper's large-scale simulation. */
public enum InstanceType {
    INFERENCE("inference", false),
    LLM_INFERENCE("llm-inference", true),
    TRAINING("training", false);

    private final String label;
    private final boolean splittable;

    InstanceType(String label, boolean splittable) {
        this.label = label;
        this.splittable = splittable;
    }

    public String label() {
        return label;
    }

    /** Whether the model may be cut into pipeline stages (LLMs, as the paper deploys LLaMA2-7B on fragments). */
    public boolean splittable() {
        return splittable;
    }

    public static Optional<InstanceType> fromLabel(String label) {
        return Arrays.stream(values()).filter(t -> t.label.equals(label)).findFirst();
    }
}
