package io.dilu.deviceplugin.agent;

import io.dilu.core.backstop.ShareBackstop;
import io.dilu.core.tokens.TokenParameters;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * The node agent's configuration ({@code dilu.agent.*}). Algorithm 2's knobs are overrides: one left unset keeps the
 * default of {@link TokenParameters#DEFAULTS}, the one place it is written.
 */
@ConfigMapping(prefix = "dilu.agent")
public interface NodeAgentConfig {

    /** Whether the agent serves the kubelet and runs the token manager (off for tests of other parts). */
    @WithDefault("true")
    boolean enabled();

    /** The node's name, for emulated GPU UUIDs. */
    @WithDefault("local")
    String nodeName();

    /** The kubelet's device-plugins directory, where kubelet.sock lives. */
    @WithDefault("/var/lib/kubelet/device-plugins")
    Path devicePluginsDir();

    /** File name of this plugin's socket in that directory. */
    @WithDefault("dilu-gpu-sm.sock")
    String endpoint();

    /** Host directory holding one control-block directory per allocation (a hostPath of the DaemonSet). */
    @WithDefault("/var/lib/dilu/containers")
    Path controlRoot();

    /**
     * Where a container sees its control block: the path compiled into the hook (DILU_CONTROL_PATH in
     * hook-native/include/dilu_control.h); change both or neither.
     */
    @WithDefault("/var/run/dilu/control")
    String containerControlDir();

    /** The hook library on the host, installed by the agent's init container. */
    @WithDefault("/opt/dilu/lib/libdilu-hook.so")
    String hookHostPath();

    /** Where containers see the hook (the webhook's LD_PRELOAD points here). */
    @WithDefault("/opt/dilu/lib/libdilu-hook.so")
    String hookContainerPath();

    /**
     * A host file the agent writes, naming the hook's container path, mounted read-only as /etc/ld.so.preload
     * into every container with a share: the node, not the tenant, decides that the hook is loaded.
     */
    @WithDefault("/var/lib/dilu/ld.so.preload")
    Path preloadHostPath();

    /** Emulated GPUs, e.g. "4x A100-40GB, 108 SMs"; when unset, NVML is used. */
    Optional<String> emulatedGpus();

    /**
     * With emulated GPUs: the host directory of their state, one directory per GPU, mounted into the containers
     * on that GPU at /var/run/dilu-emu (DILU_EMU_DIR), so that they contend for one emulated GPU.
     */
    @WithDefault("/var/lib/dilu/emulated-gpus")
    Path emulatorHostDir();

    /** Whether to write the GPU inventory on this node's Node object (needs RBAC to patch nodes). */
    @WithDefault("true")
    boolean publishInventory();

    /** How often GPU health is checked; changes reach the kubelet at once through ListAndWatch. */
    @WithDefault("5s")
    Duration healthInterval();

    /** Whether shares are matched to their pods (needs the kubelet's PodResources socket and the API server). */
    @WithDefault("true")
    boolean matchPods();

    /** The kubelet's PodResources API socket. */
    @WithDefault("/var/lib/kubelet/pod-resources/kubelet.sock")
    Path podResourcesSocket();

    /** How often shares are checked against the kubelet's PodResources API. */
    @WithDefault("2s")
    Duration reconcileInterval();

    /**
     * How long the kubelet must go on not listing a share before its control block is removed: long enough
     * for a restarting kubelet to list its pods again.
     */
    @WithDefault("30s")
    Duration releaseGrace();

    /** Token period. */
    Optional<Duration> period();

    /**
     * The thread-block time one token stands for, in microseconds. A GPU's MaxTokens, what the whole GPU runs
     * in one period, is its SM count × period / block time: 5,400 for an A100's 108 SMs, 6,600 for an H100
     * SXM's 132, at 5 ms and 100 µs.
     */
    @WithDefault("100")
    int blockMicros();

    /**
     * Parts in which a best-effort container's tokens are released over a period, so that its kernels do not
     * all queue at the period's start ahead of an SLO neighbour's (1 releases them at once).
     */
    @WithDefault("5")
    int refillSteps();

    /**
     * The ratio of an SLO instance's kernel launch cycle to the smallest it has shown above which it is in
     * EMERGENCY (η_violation, paper §3.4.1). A pod overrides it with {@code dilu.io/klc-threshold}, or
     * {@code dilu.io/llm: "true"}; one below it needs the quota right.
     */
    OptionalDouble etaViolation();

    /**
     * Events on pods (throttling emergencies, memory refusals): at most one per pod and reason per window, the
     * occurrences in between counted into the next one.
     */
    @WithDefault("1m")
    Duration eventWindow();

    /** At most this many events per window from this node, whatever its pods do. */
    @WithDefault("30")
    int eventsPerWindow();

    /**
     * How Allocate hands a container its GPUs to the NVIDIA container toolkit: {@code volume-mounts} (the default:
     * {@code /dev/null} mounted at {@code /var/run/nvidia-container-devices/<uuid>}, read by a toolkit with
     * {@code accept-nvidia-visible-devices-as-volume-mounts = true}; a route no image or pod spec of a tenant can
     * take), {@code envvar} ({@code NVIDIA_VISIBLE_DEVICES}, the toolkit's default route, which an image's ENV takes
     * too) or {@code both} (for nodes not yet configured, docs/install.md).
     */
    @WithDefault("volume-mounts")
    String deviceListStrategy();

    /**
     * The NVIDIA container toolkit's configuration as the agent sees it (the chart mounts the host's directory
     * read-only): read at start and every {@link #toolkitCheckInterval()}, to tell whether this node lets containers
     * name their own GPUs (docs/node-agent.md, "The toolkit's variable route"). Absent on a node with emulated GPUs,
     * the route does not exist there; absent beside NVIDIA GPUs, the toolkit's defaults leave it open.
     */
    @WithDefault("/etc/nvidia-container-runtime/config.toml")
    Path toolkitConfig();

    /** How often {@link #toolkitConfig()} is read again (a change reaches the taint and the kubelet within this). */
    @WithDefault("30s")
    Duration toolkitCheckInterval();

    /**
     * While the toolkit's variable route is open, leave the node schedulable and keep serving the kubelet (only say
     * it: log, metric, Event). For fleets being converted with {@code device-list-strategy} {@code both} or
     * {@code envvar}; any image's ENV then takes every GPU of the node.
     */
    @WithDefault("false")
    boolean allowOpenToolkit();

    /**
     * Algorithm 2's knobs as configured, but for MaxTokens, which each GPU's SM count sets
     * ({@link NodeAgent#tokenParameters}).
     */
    default TokenParameters tokens() {
        TokenParameters d = TokenParameters.DEFAULTS;
        return d.withPeriod(period().orElse(d.period())).withEtaViolation(etaViolation().orElse(d.etaViolation()));
    }

    /** The backstop: what the GPUs say each process uses, against each container's share (docs/node-agent.md). */
    BackstopConfig backstop();

    /** {@code dilu.agent.backstop.*} */
    interface BackstopConfig {

        /** Whether the agent reads the GPUs' processes and judges them at all. */
        @WithDefault("true")
        boolean enabled();

        /** How often the GPUs' processes are read. */
        @WithDefault("1s")
        Duration interval();

        /**
         * How often, between reads, the memory of the processes found on a GPU is read again and judged by the memory
         * rule: memory held for less than this between two reads may go unseen (docs/node-agent.md, "Memory held
         * between rounds"). 0: only at each read.
         */
        @WithDefault("50ms")
        Duration memoryInterval();

        /** Whether a process holding GPU memory beyond its container's share and the tolerance is ended (SIGKILL). */
        @WithDefault("true")
        boolean killMemoryExcess();

        /**
         * Whether a container's processes are ended (SIGKILL) once it has used a GPU beyond its SM limit this many
         * rounds in a row (each judging the whole {@link #smWindow()}), where the GPU's own accounting says so (NVML);
         * 0: never ended, only reported.
         */
        @WithDefault("3")
        int killComputeAfterRounds();

        /**
         * GPU memory a container may hold on a GPU beyond its share, in MiB, once whatever its number of processes: the
         * driver's context, which the GPU reports as a process's and the hook never books (ShareBackstop's
         * CONTEXT_ALLOWANCE_MIB, measured on an H100 with driver 580).
         */
        @WithDefault("" + ShareBackstop.CONTEXT_ALLOWANCE_MIB)
        long contextAllowanceMib();

        /** How much reading an SM judgement integrates: at least ten of NVML's samples even at its slowest (1 s). */
        @WithDefault("10s")
        Duration smWindow();

        /** How far above its SM limit a container may run, as a fraction of the limit (the hook's own slack). */
        @WithDefault("0.25")
        double smMargin();

        /**
         * With NVML, what a container may keep the GPU busy beyond its limit × (1 + sm-margin), as a share of the
         * window: one read's worth of samples at a window's edge (1 s of 10 s).
         */
        @WithDefault("0.10")
        double busySlack();

        /** How long a process may be on a GPU without a share before it is reported. */
        @WithDefault("10s")
        Duration unknownGrace();

        /** The host's /proc (the agent runs with hostPID). */
        @WithDefault("/proc")
        Path procRoot();

        /** The bounds {@link ShareBackstop} judges by, from these settings. */
        default ShareBackstop.Bounds bounds() {
            return new ShareBackstop.Bounds(contextAllowanceMib() << 20, smWindow(), smMargin(), busySlack(), unknownGrace());
        }
    }
}
