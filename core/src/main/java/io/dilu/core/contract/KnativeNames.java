package io.dilu.core.contract;

import java.util.List;

/**
 * The names Knative Serving gives what Dilu reads and writes (knative.dev/serving): a revision's autoscaling
 * annotations, its labels, the {@code config-autoscaler} ConfigMap and the internal resources the autoscaler owns.
 * Strings only (one list of them), as {@link DiluNames}; what they mean is parsed where they are read.
 *
 * <p>In core, beside DiluNames, rather than in kube-contract or the autoscaler: core's own decisions read Knative's
 * annotations and ConfigMap ({@code io.dilu.core.scaling}: scale bounds, timing, the KPA's knobs,
 * KnativeAutoscalerConfig), and core depends on no other module, while every other module (kube-contract, the
 * autoscaler, the webhook, the simulator, the e2e tests) depends on core.
 */
public final class KnativeNames {

    private KnativeNames() {}

    /** The namespace Knative Serving is installed in. */
    public static final String SERVING_NAMESPACE = "knative-serving";
    /** ConfigMap of {@link #SERVING_NAMESPACE}: the cluster-wide autoscaling defaults. */
    public static final String CONFIG_AUTOSCALER = "config-autoscaler";

    /** Label of a revision's pods (and of its PodAutoscaler): the Knative Service it belongs to. */
    public static final String SERVICE_LABEL = "serving.knative.dev/service";
    /** Label of a revision's pods (and of its PodAutoscaler): the revision. */
    public static final String REVISION_LABEL = "serving.knative.dev/revision";
    /** Label of a KServe InferenceService's pods (KServe's serverless mode runs them as Knative revisions). */
    public static final String KSERVE_SERVICE_LABEL = "serving.kserve.io/inferenceservice";
    /** The labels that mark a serving function's pod and name the function, the most specific first. */
    public static final List<String> SERVING_LABELS = List.of(KSERVE_SERVICE_LABEL, SERVICE_LABEL);

    /** Revision (and PodAutoscaler) annotation: the autoscaler class that scales it. */
    public static final String CLASS = "autoscaling.knative.dev/class";
    /** Knative's own class, the Knative Pod Autoscaler's: a PodAutoscaler without a {@link #CLASS} annotation has it. */
    public static final String KPA_CLASS = "kpa.autoscaling.knative.dev";
    public static final String METRIC = "autoscaling.knative.dev/metric";
    public static final String TARGET = "autoscaling.knative.dev/target";
    public static final String TARGET_UTILIZATION = "autoscaling.knative.dev/target-utilization-percentage";
    public static final String TARGET_BURST_CAPACITY = "autoscaling.knative.dev/target-burst-capacity";
    public static final String PANIC_WINDOW = "autoscaling.knative.dev/panic-window-percentage";
    public static final String PANIC_THRESHOLD = "autoscaling.knative.dev/panic-threshold-percentage";
    public static final String MIN_SCALE = "autoscaling.knative.dev/min-scale";
    public static final String MAX_SCALE = "autoscaling.knative.dev/max-scale";
    public static final String INITIAL_SCALE = "autoscaling.knative.dev/initial-scale";
    public static final String WINDOW = "autoscaling.knative.dev/window";
    public static final String SCALE_DOWN_DELAY = "autoscaling.knative.dev/scale-down-delay";
    public static final String SCALE_TO_ZERO_POD_RETENTION = "autoscaling.knative.dev/scale-to-zero-pod-retention-period";

    /** API group of the PodAutoscaler, which Knative's revision reconciler writes and the autoscaler reconciles. */
    public static final String PODAUTOSCALER_GROUP = "autoscaling.internal.knative.dev";
    /** API group of the ServerlessService, whose spec the autoscaler owns. */
    public static final String SERVERLESSSERVICE_GROUP = "networking.internal.knative.dev";
    /** The version of both internal groups. */
    public static final String INTERNAL_VERSION = "v1alpha1";
    public static final String PODAUTOSCALER_API_VERSION = PODAUTOSCALER_GROUP + "/" + INTERNAL_VERSION;
    public static final String SERVERLESSSERVICE_API_VERSION = SERVERLESSSERVICE_GROUP + "/" + INTERNAL_VERSION;
    public static final String PODAUTOSCALER_KIND = "PodAutoscaler";
    public static final String SERVERLESSSERVICE_KIND = "ServerlessService";

    /** The label ({@code key=value}) of Knative's activator pods in {@link #SERVING_NAMESPACE}. */
    public static final String ACTIVATOR_POD_LABEL = "app=activator";
}
