package io.dilu.webhook;

import io.dilu.core.tokens.TokenParameters;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/** The admission webhook's configuration ({@code dilu.webhook.*}). */
@ConfigMapping(prefix = "dilu.webhook")
public interface WebhookConfig {

    /**
     * Where GPU containers see the hook library: the node agent's device plugin mounts it there (read-only) at
     * Allocate, and the webhook points {@code LD_PRELOAD} at it.
     */
    @WithDefault("/opt/dilu/lib")
    String hookContainerDir();

    /** The hook library's file name in it. */
    @WithDefault("libdilu-hook.so")
    String hookFile();

    /** The scheduler GPU pods are given (the dilu-scheduler profile), and the only one they may name. */
    @WithDefault("dilu-scheduler")
    String schedulerName();

    /**
     * The RuntimeClass given to GPU pods that name none: the NVIDIA container runtime's (e.g. {@code nvidia}) on
     * clusters where it is not the nodes' default containerd runtime, so that it hands containers the GPUs the
     * node agent names. Unset (the default): pods keep the nodes' default runtime.
     */
    Optional<String> runtimeClassName();

    /** Namespace label that lets privileged containers have a GPU share (they could bypass the hook). */
    @WithDefault("dilu.io/allow-privileged")
    String allowPrivilegedLabel();

    /**
     * Host paths no pod of a covered namespace may mount (a hostPath volume at, under or above one is refused): the
     * node agent's (control blocks, the hook); the kubelet's (every pod's ServiceAccount token and volumes under
     * {@code pods}, its PKI, the device-plugin and pod-resources sockets); the container runtimes' (their sockets run
     * every container of the node, their stores hold every image); the node's credentials in
     * {@code /etc/kubernetes}; and the host's libraries, the GPU driver's among them (the NVIDIA container toolkit
     * hands a container the driver itself; a writable mount changes it for every tenant). Each directory under its
     * names: {@code /run/dilu} beside {@code /var/run/dilu} because {@code /var/run} links to {@code /run} on most
     * hosts, {@code /lib} beside {@code /usr/lib}.
     */
    @WithDefault("/var/lib/dilu,/opt/dilu,/var/run/dilu,/run/dilu,/var/lib/kubelet,/etc/kubernetes,"
            + "/var/run/containerd,/run/containerd,/var/lib/containerd,/var/run/crio,/run/crio,/var/lib/containers,"
            + "/var/run/docker.sock,/run/docker.sock,/usr/lib,/usr/lib64,/lib,/lib64,/usr/local/nvidia,/run/nvidia,"
            + "/var/run/nvidia")
    List<String> protectedHostPaths();

    /**
     * Paths inside GPU containers where the device plugin mounts the hook, the control block and
     * {@code /etc/ld.so.preload}. A volumeMount at or under one of them could cover those mounts; one above is
     * harmless (runtimes mount shallower paths first), so it is allowed.
     */
    @WithDefault("/opt/dilu/lib,/var/run/dilu,/run/dilu,/etc/ld.so.preload")
    List<String> protectedContainerPaths();

    /**
     * Users (AdmissionReview {@code userInfo.username}) that may change {@code dilu.io/assigned-gpus} on an
     * existing pod: the ServiceAccounts of the scheduler extender and the node agent (manifests/).
     */
    @WithDefault("system:serviceaccount:dilu-system:dilu-scheduler,system:serviceaccount:dilu-system:dilu-node-agent")
    List<String> assignedGpusWriters();

    /**
     * Users that may change the parking annotations ({@code dilu.io/parked}, {@code dilu.io/wake}, {@code
     * dilu.io/wake-failed}) on an existing pod: the ServiceAccounts of the autoscaler, which parks and wakes, and of
     * the scheduler extender, which answers a wake (manifests/).
     */
    @WithDefault("system:serviceaccount:dilu-system:dilu-autoscaler,system:serviceaccount:dilu-system:dilu-scheduler")
    List<String> parkingWriters();

    /**
     * The largest AdmissionReview read, in bytes; a bigger one is denied unread. 3 MiB is the API server's
     * own limit for a request body, so no pod a client can store is refused for its size.
     */
    @WithDefault("3145728")
    long maxRequestBytes();

    /** The most containers (all kinds together) a pod may have; a pod with more is refused before any work. */
    @WithDefault("256")
    int maxContainers();

    /**
     * The KLC threshold the nodes hold an SLO instance to when it names none (their {@code dilu.agent.eta-violation}):
     * a pod's {@code dilu.io/klc-threshold} below it, or {@code dilu.io/llm} where LLMs get less, needs the quota right.
     * Unset: core's default ({@link TokenParameters#DEFAULTS}), as the nodes'.
     */
    OptionalDouble etaViolation();

    /**
     * {@link #etaViolation()}, or core's default when unset; through core's record, which refuses a value no node
     * would run with.
     */
    default double nodeEtaViolation() {
        TokenParameters d = TokenParameters.DEFAULTS;
        return d.withEtaViolation(etaViolation().orElse(d.etaViolation())).etaViolation();
    }

    /** Whether Nodes and Namespaces are watched (off only in unit tests). */
    @WithDefault("true")
    boolean watch();
}
