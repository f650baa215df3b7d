package io.dilu.core.contract;

/**
 * The names the parts of Dilu agree on (DESIGN.md, "Contracts between the pieces"): extended resources,
 * pod annotations and the node annotation. Strings only; what they mean is parsed by the classes beside.
 */
public final class DiluNames {

    private DiluNames() {}

    /**
     * Extended resource: SM request in percent of one GPU (1..100), one device ID per percent, {@link
     * #GPU_SM_IDS_PER_GPU} IDs advertised per GPU.
     */
    public static final String GPU_SM = "dilu.io/gpu-sm";
    /**
     * Device IDs of {@link #GPU_SM} the node agent advertises per GPU: ten GPUs' worth. A parked pod keeps the IDs the
     * kubelet gave its running container (an allocation cannot shrink) while the scheduler extender gives its SM
     * request to new pods, so the kubelet's count of IDs (and kube-scheduler's of the node's allocatable) must leave
     * room beyond the 100 percent the extender books: the extender's book (Ω), not the count, bounds the booked SMs
     * (docs/architecture.md, "Parking").
     */
    public static final int GPU_SM_IDS_PER_GPU = 1000;
    /** Extended resource: GPU memory in MiB, managed by the scheduler extender only. */
    public static final String GPU_MEMORY = "dilu.io/gpu-memory";

    /** Pod annotation: SM limit in percent, request..100; default min(100, 2 × request). */
    public static final String SM_LIMIT = "dilu.io/sm-limit";
    /** Pod annotation: {@code slo} or {@code best-effort}. */
    public static final String PRIORITY = "dilu.io/priority";
    /** Pod annotation: the function an instance belongs to, for workload affinity. */
    public static final String FUNCTION = "dilu.io/function";
    /**
     * Pod annotation: the ratio of a kernel launch cycle to the smallest one seen above which an SLO instance
     * is in EMERGENCY (η_violation), in (1, 10]; default 1.6, or 1.3 for an LLM function.
     */
    public static final String KLC_THRESHOLD = "dilu.io/klc-threshold";
    /** Pod annotation: {@code true} for an LLM function (default KLC threshold 1.3), {@code false} otherwise. */
    public static final String LLM = "dilu.io/llm";
    /** Pod annotation: inference batch size, at least 1. */
    public static final String BATCH_SIZE = "dilu.io/batch-size";
    /**
     * Pod annotation: {@code pipeline} lets the scheduler split the pod's one GPU container into pipeline
     * stages over several GPUs of a node when no single GPU has its memory free (LLM inference).
     */
    public static final String SPLIT = "dilu.io/split";
    /** The one value of {@link #SPLIT}. */
    public static final String SPLIT_PIPELINE = "pipeline";
    /**
     * Revision annotation: requests per second one instance serves at its SM request, for Dilu's autoscaler (over
     * the profile's); a number &gt; 0.
     */
    public static final String SERVING_RPS = "dilu.io/serving-rps";
    /** Revision annotation, with {@link #SERVING_RPS}: what one instance serves at its SM limit (the burst guard). */
    public static final String SERVING_RPS_AT_LIMIT = "dilu.io/serving-rps-at-limit";
    /**
     * Pod and revision annotation: the GpuFunctionProfile (same namespace) an instance's quotas come from (webhook)
     * and its function's serving rate (autoscaler).
     */
    public static final String PROFILE = "dilu.io/profile";
    /** The PodAutoscaler class ({@code autoscaling.knative.dev/class}) Dilu's autoscaler handles by default. */
    public static final String AUTOSCALER_CLASS = "co-scaling.dilu.io";
    /** Pod annotation written at bind and corrected by the node agent: see {@link AssignedGpus}. */
    public static final String ASSIGNED_GPUS = "dilu.io/assigned-gpus";

    /**
     * Pod annotation, written by the autoscaler: the time (RFC 3339) it parked the pod — kept with its model in GPU
     * memory, its SM booking given back, out of the request path ({@code RevisionScaler}). Present while parked. The
     * scheduler extender books a parked pod at its memory alone; the node agent grants it no tokens.
     */
    public static final String PARKED = "dilu.io/parked";
    /**
     * Pod annotation, written by the autoscaler beside removing {@link #PARKED}: the time (RFC 3339) it asked the
     * parked pod to serve again. The scheduler extender books its SM request back where its GPU has room and turns
     * {@link #SERVING_CONDITION} true, or answers {@link #WAKE_FAILED}; either way it removes this annotation.
     */
    public static final String WAKE = "dilu.io/wake";
    /**
     * Pod annotation, written by the scheduler extender: why a {@link #WAKE} found no room on the pod's GPU. The
     * autoscaler then deletes the pod, and its replacement is placed elsewhere: a cold start, counted as a failed wake.
     */
    public static final String WAKE_FAILED = "dilu.io/wake-failed";
    /**
     * Pod condition type, a readiness gate of every pod of Dilu's autoscaling class with a GPU share (the webhook adds
     * it): true while the pod's SM request is booked and it may serve — set by the scheduler extender at bind and at a
     * wake — false while it is parked (the autoscaler), so that a parked pod is not ready and leaves its Services'
     * endpoints, whatever routes to them.
     */
    public static final String SERVING_CONDITION = "dilu.io/serving";
    /**
     * The reason of {@link #SERVING_CONDITION} True on a parked pod, written by the autoscaler: its revision's last
     * instance, left in the request path where the revision may not reach zero (alongside Knative's autoscaler, or scale
     * to zero off), so that its ReplicaSet would start another were it let go. The scheduler extender keeps its GPU
     * ({@code ParkedEviction.alone}); a last instance parked where its revision may reach zero has another reason, and
     * its GPU goes back when nothing else holds it.
     */
    public static final String SERVING_KEPT_REASON = "LastInstanceKept";

    /** Node annotation: the node's GPUs as JSON, written by the node agent. */
    public static final String GPU_INVENTORY = "dilu.io/gpu-inventory";

    /**
     * Node taint (effect NoSchedule), set by the node agent while its node's NVIDIA container toolkit gives any
     * unprivileged container the GPUs its {@code NVIDIA_VISIBLE_DEVICES} names (an image's ENV included), and removed
     * once it does not: a pod that does not tolerate it is placed elsewhere, whatever admission let through. The
     * agent's own DaemonSet tolerates it, so that it can come back and lift the taint.
     */
    public static final String TOOLKIT_ENVVAR_OPEN_TAINT = "dilu.io/toolkit-envvar-open";

    /** The scheduler profile that places pods with the extender. */
    public static final String SCHEDULER_NAME = "dilu-scheduler";

    /**
     * Namespace label: {@code enabled} puts its pods through the webhook (Dilu GPU shares are admitted there and
     * nowhere else); {@code disabled} keeps the webhook away from it entirely (dilu-system).
     */
    public static final String WEBHOOK_LABEL = "dilu.io/webhook";
    public static final String WEBHOOK_ENABLED = "enabled";
    public static final String WEBHOOK_DISABLED = "disabled";
}
