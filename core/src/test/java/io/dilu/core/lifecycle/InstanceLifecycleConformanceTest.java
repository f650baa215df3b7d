package io.dilu.core.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The lifecycle's plan, carried out second by second in a world that fights it ({@link LifecycleWorld}): decisions
 * that change every few seconds, a watch up to three seconds late, writes that fail, wakes refused, parked pods
 * evicted, a ReplicaSet that adds and removes pods on its own. Over 1,000 seeded sequences, no instance makes a move
 * the transitions do not allow, none is woken twice, the kept mark is written before any park, a refused pod is
 * replaced only when no parked one is left to try, and once the trouble stops and the decision holds, the pods reach
 * it: as many serving and parked as decided, the last one in the request path (kept where the decision keeps it).
 * A failing sequence names its seed, which reproduces it. The Kubernetes realizer runs the same sequences on a fake
 * API server ({@code PodLifecycleConformanceTest} in the autoscaler).
 */
class InstanceLifecycleConformanceTest {

    @Test
    void everySequenceKeepsTheRulesAndReachesTheDecision() {
        List<Throwable> broken = new ArrayList<>();
        for (long seed = 1; seed <= LifecycleConformance.SEQUENCES; seed++) {
            broken.addAll(LifecycleConformance.sequence(seed, LifecycleConformance.TROUBLE, Optional.empty()));
        }
        assertThat(broken).as("rules broken, each naming its seed").isEmpty();
    }
}
