package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.deviceplugin.gpu.ToolkitConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** What the gate does to the node and the kubelet as the toolkit's variable route opens and closes. */
class ToolkitGateTest {

    /** The Node as the gate sees it: what it was made to carry, and what it was told; writes fail while {@code down}. */
    static final class RecordingNode implements ToolkitGate.Node {
        boolean tainted;
        int taintWrites;
        boolean down;
        final List<String> events = new ArrayList<>();

        @Override
        public void taint(boolean tainted) {
            if (down) {
                throw new IllegalStateException("the API server is away");
            }
            taintWrites++;
            this.tainted = tainted;
        }

        @Override
        public void event(String type, String reason, String message) {
            if (down) {
                throw new IllegalStateException("the API server is away");
            }
            events.add(type + " " + reason);
        }
    }

    static final ToolkitConfig.Verdict OPEN = new ToolkitConfig.Verdict(true, "open", Optional.empty());
    static final ToolkitConfig.Verdict CLOSED = new ToolkitConfig.Verdict(false, "closed", Optional.empty());

    @Test
    void anOpenRouteTaintsTheNodeAndWithdrawsThePluginUntilItCloses() {
        AtomicReference<ToolkitConfig.Verdict> toolkit = new AtomicReference<>(OPEN);
        RecordingNode node = new RecordingNode();
        ToolkitGate gate = new ToolkitGate(toolkit::get, node, true);
        assertThat(gate.openGauge()).as("not judged yet").isEqualTo(-1);
        gate.judge();
        assertThat(gate.mayServe()).as("decided before the plugin first serves, without the API server").isFalse();
        assertThat(node.taintWrites).isZero();
        assertThat(gate.openGauge()).isEqualTo(1);

        gate.check();
        assertThat(node.tainted).isTrue();
        assertThat(node.events).containsExactly("Warning " + ToolkitGate.OPENED);
        gate.check();
        assertThat(node.taintWrites).as("nothing written again while nothing changes").isEqualTo(1);
        assertThat(node.events).hasSize(1);

        toolkit.set(CLOSED);
        gate.check();
        assertThat(node.tainted).isFalse();
        assertThat(gate.mayServe()).isTrue();
        assertThat(gate.openGauge()).isZero();
        assertThat(node.events).containsExactly("Warning " + ToolkitGate.OPENED, "Normal " + ToolkitGate.CLOSED);
    }

    @Test
    void aClosedRouteFromTheStartClearsATaintLeftBehindAndSaysNothing() {
        RecordingNode node = new RecordingNode();
        node.tainted = true; // an earlier run of the agent, before the administrator closed the route
        ToolkitGate gate = new ToolkitGate(() -> CLOSED, node, true);
        gate.check();
        assertThat(node.tainted).isFalse();
        assertThat(gate.mayServe()).isTrue();
        assertThat(node.events).isEmpty();
    }

    @Test
    void aFailedWriteIsTriedAgainAtTheNextCheck() {
        RecordingNode node = new RecordingNode();
        node.down = true;
        ToolkitGate gate = new ToolkitGate(() -> OPEN, node, true);
        gate.check();
        assertThat(gate.mayServe()).as("withdrawn whatever the API server says").isFalse();
        assertThat(node.tainted).isFalse();
        node.down = false;
        gate.check();
        assertThat(node.tainted).isTrue();
        assertThat(node.events).containsExactly("Warning " + ToolkitGate.OPENED);
    }

    @Test
    void withoutEnforcementAnOpenRouteIsOnlySaid() {
        RecordingNode node = new RecordingNode();
        ToolkitGate gate = new ToolkitGate(() -> OPEN, node, false);
        gate.check();
        assertThat(gate.mayServe()).isTrue();
        assertThat(node.tainted).isFalse();
        assertThat(gate.openGauge()).isEqualTo(1);
        assertThat(node.events).containsExactly("Warning " + ToolkitGate.OPENED);
    }
}
