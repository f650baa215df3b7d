package io.dilu.deviceplugin.agent;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/** The node agent's configuration ({@code dilu.agent.*}). */
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
    @WithDefault("5ms")
    Duration period();

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
     * EMERGENCY (η_violation, paper §3.4.1; 1.6 as in Dilu's RCKM). A pod overrides it with
     * {@code dilu.io/klc-threshold}; {@code dilu.io/llm: "true"} gives 1.3.
     */
    @WithDefault("1.6")
    double etaViolation();

    /**
     * Events on pods (throttling emergencies, memory refusals): at most one per pod and reason per window, the
     * occurrences in between counted into the next one.
     */
    @WithDefault("1m")
    Duration eventWindow();

    /** At most this many events per window from this node, whatever its pods do. */
    @WithDefault("30")
    int eventsPerWindow();
}
