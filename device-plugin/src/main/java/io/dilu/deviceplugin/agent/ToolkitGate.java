package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.DiluNames;
import io.dilu.deviceplugin.gpu.ToolkitConfig;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The node's answer to a GPU route admission cannot hold: while the NVIDIA container toolkit of this node gives any
 * unprivileged container the GPUs its {@code NVIDIA_VISIBLE_DEVICES} names — from an image's ENV, from a ConfigMap
 * edited after admission, or from a pod admitted while the uncovered namespaces' webhook failed open — the node is
 * tainted {@link DiluNames#TOOLKIT_ENVVAR_OPEN_TAINT} (NoSchedule: pods that do not tolerate it go elsewhere) and
 * the device plugin is withdrawn from the kubelet (no new share is handed out on a node whose GPUs anyone may take).
 * Once the toolkit is set closed, the taint is lifted and the plugin serves again. Each change is logged with what to
 * do, told on the Node as an Event, and exported ({@code dilu_toolkit_envvar_route_open}).
 *
 * <p>With {@code enforce} off (an administrator's {@code dilu.agent.allow-open-toolkit}, while converting a fleet)
 * an open route is still said everywhere but neither taints nor withdraws.
 */
public final class ToolkitGate {

    private static final Logger LOG = Logger.getLogger(ToolkitGate.class);

    /** Event reasons on the Node. */
    public static final String OPENED = "DiluToolkitEnvvarRouteOpen";
    public static final String CLOSED = "DiluToolkitEnvvarRouteClosed";

    /** What the gate changes on the node's object in the API server. */
    public interface Node {
        /** Makes the node carry the taint, or not; a no-op when it already does what is asked. Throws when it cannot. */
        void taint(boolean tainted);

        /** An Event on the Node ({@code Normal} or {@code Warning}); throws when it cannot be written. */
        void event(String type, String reason, String message);
    }

    private final Supplier<ToolkitConfig.Verdict> judge;
    private final Node node;
    private final boolean enforce;
    private volatile ToolkitConfig.Verdict verdict;
    /** What the node was last made to carry: null until a write succeeded (a taint left by an earlier run is unknown). */
    private Boolean tainted;
    private boolean lastWriteFailed;
    /** The state last told on the Node by an Event: null before any. */
    private Boolean told;
    private boolean lastEventFailed;

    /**
     * @param judge reads the node's toolkit settings ({@link ToolkitConfig#judge})
     * @param enforce taint and withdraw while open (else only say so)
     */
    public ToolkitGate(Supplier<ToolkitConfig.Verdict> judge, Node node, boolean enforce) {
        this.judge = judge;
        this.node = node;
        this.enforce = enforce;
    }

    /**
     * Reads the toolkit's settings; says what changed. Cheap (a file read) and without API calls, so the agent asks it
     * before it first serves the kubelet.
     */
    public synchronized ToolkitConfig.Verdict judge() {
        ToolkitConfig.Verdict now = judge.get();
        ToolkitConfig.Verdict before = verdict;
        verdict = now;
        if (before == null || before.open() != now.open()) {
            if (now.open()) {
                LOG.errorf("%s. %s Set accept-nvidia-visible-devices-envvar-when-unprivileged = false and "
                        + "accept-nvidia-visible-devices-as-volume-mounts = true (docs/install.md, GPU nodes).", now.why(),
                        enforce ? "This node is tainted " + DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT + ":NoSchedule and hands out no "
                                + "Dilu share until then." : "dilu.agent.allow-open-toolkit=true: the node stays schedulable.");
            } else if (before != null) {
                LOG.infof("%s: the NVIDIA toolkit's variable route is closed; %s", now.why(),
                        enforce ? "the taint is lifted and the device plugin serves again" : "nothing was withheld");
            }
        }
        return now;
    }

    /**
     * One round: judges, then makes the node match — taint on or off — and tells the Node when the route opened or
     * closed. A write that fails is tried again at the next round.
     */
    public synchronized void check() {
        ToolkitConfig.Verdict now = judge();
        boolean wanted = enforce && now.open();
        // Told once per change; a route closed from the start is the quiet, normal case.
        if (told == null ? now.open() : told != now.open()) {
            String message = now.open()
                    ? now.why() + (enforce ? "; node tainted " + DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT + ":NoSchedule and no Dilu "
                            + "share handed out until the toolkit is set as docs/install.md says" : "; left schedulable "
                            + "(dilu.agent.allow-open-toolkit)")
                    : now.why() + (enforce ? "; taint lifted, Dilu shares handed out again" : "");
            try {
                node.event(now.open() ? "Warning" : "Normal", now.open() ? OPENED : CLOSED, message);
                told = now.open();
            } catch (RuntimeException e) {
                if (!lastEventFailed) {
                    LOG.warnf("could not write the %s event on the Node (%s); trying again at each check",
                            now.open() ? OPENED : CLOSED, e.getMessage());
                }
                lastEventFailed = true;
            }
        }
        if (tainted != null && tainted == wanted) {
            return;
        }
        try {
            node.taint(wanted);
            tainted = wanted;
            lastWriteFailed = false;
        } catch (RuntimeException e) {
            tainted = null;
            if (!lastWriteFailed) {
                LOG.warnf("could not %s the taint %s on the Node (%s); trying again at each check",
                        wanted ? "set" : "clear", DiluNames.TOOLKIT_ENVVAR_OPEN_TAINT, e.getMessage());
            }
            lastWriteFailed = true;
        }
    }

    /** Whether the device plugin may serve the kubelet: the route is closed, or enforcement is off. */
    public boolean mayServe() {
        ToolkitConfig.Verdict v = verdict;
        return !enforce || v != null && !v.open();
    }

    /** 1 open, 0 closed, -1 not judged yet. */
    public double openGauge() {
        ToolkitConfig.Verdict v = verdict;
        return v == null ? -1 : v.open() ? 1 : 0;
    }
}
