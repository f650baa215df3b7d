package io.dilu.core.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.InstanceLifecycle.Phase;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The lifecycle's plan, carried out second by second in a world that fights it ({@link LifecycleWorld}): decisions
 * that change every few seconds, a watch up to three seconds late, writes that fail, wakes refused, parked pods
 * evicted, a ReplicaSet that adds and removes pods on its own. Over 1,000 seeded sequences, no instance makes a move
 * the transitions do not allow, none is woken twice, the kept mark is written before any park, a refused pod is
 * replaced only when no parked one is left to try, and once the trouble stops and the decision holds, the pods reach
 * it: as many serving and parked as decided, the last one in the request path (kept where the decision keeps it).
 * A failing sequence names its seed, which reproduces it.
 */
class InstanceLifecycleConformanceTest {

    static final int SEQUENCES = 1_000;
    static final LifecycleWorld.Trouble TROUBLE = new LifecycleWorld.Trouble(0.15, 0.3, 0.03, 3);

    @Test
    void everySequenceKeepsTheRulesAndReachesTheDecision() {
        for (long seed = 1; seed <= SEQUENCES; seed++) {
            run(seed);
        }
    }

    private static void run(long seed) {
        Random random = new Random(seed);
        LifecycleWorld world = new LifecycleWorld(random, TROUBLE);
        int desired = 1;
        int parked = 0;
        boolean lastKept = false;
        for (int s = 0; s < 60; s++) {
            if (random.nextInt(4) == 0) {
                desired = random.nextInt(5);
                parked = random.nextInt(4);
                lastKept = desired == 0 && parked > 0 && random.nextBoolean();
            }
            world.step(desired, parked, lastKept);
        }
        world.trouble = LifecycleWorld.Trouble.NONE;
        for (int s = 0; s < 30; s++) {
            world.step(desired, parked, lastKept);
        }
        String as = "seed " + seed + " (" + desired + " serving, " + parked + " parked, kept " + lastKept + ")";
        assertThat(world.violations).as(as).isEmpty();
        for (InstanceLifecycle.Plan plan : world.plans) {
            List<Intent> intents = plan.intents();
            int lastKeptMark = -1;
            int firstPark = Integer.MAX_VALUE;
            for (int i = 0; i < intents.size(); i++) {
                if (intents.get(i) instanceof Intent.Serving sv && sv.path() == Path.KEPT) {
                    lastKeptMark = i;
                }
                if (intents.get(i) instanceof Intent.Park && firstPark == Integer.MAX_VALUE) {
                    firstPark = i;
                }
            }
            assertThat(lastKeptMark).as(as + ": the kept mark before the parks").isLessThan(firstPark);
            assertThat(plan.delete()).as(as + ": only refused pods are replaced").allMatch(Instance::wakeFailed);
        }
        InstanceLifecycle end = world.truth();
        assertThat(end.servingCount()).as(as + ": serving").isEqualTo(desired);
        assertThat(end.parkedCount()).as(as + ": parked").isEqualTo(parked);
        List<Instance> inPath = end.instances().stream().filter(p -> !p.deleting() && p.parkedAt().isPresent()
                && p.path() != Path.OUT).toList();
        if (desired == 0 && parked > 0) {
            assertThat(inPath).as(as + ": one parked pod left in the request path").hasSize(1);
            assertThat(inPath.getFirst().phase()).as(as).isEqualTo(lastKept ? Phase.KEPT : Phase.PARKED_IN);
        } else {
            assertThat(inPath).as(as + ": no parked pod in the path beside serving ones").isEmpty();
        }
    }
}
