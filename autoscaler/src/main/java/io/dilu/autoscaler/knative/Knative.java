package io.dilu.autoscaler.knative;

/** The Knative names the autoscaler works with (knative.dev/serving). */
public final class Knative {

    private Knative() {}

    public static final String CLASS = "autoscaling.knative.dev/class";
    /** Knative's own class, the Knative Pod Autoscaler's: a PodAutoscaler without a class annotation has it. */
    public static final String KPA_CLASS = "kpa.autoscaling.knative.dev";
    public static final String REVISION_LABEL = "serving.knative.dev/revision";
}
