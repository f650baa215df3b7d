package io.dilu.core.lifecycle;

import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.InstanceLifecycle.Path;
import io.dilu.core.lifecycle.InstanceLifecycle.Phase;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.assertj.core.api.SoftAssertions;

/**
 * The lifecycle's conformance sequences ({@link InstanceLifecycleConformanceTest}), for any realizer: the world's own
 * in memory, and a {@link LifecycleWorld.Mirror} run beside it.
 */
public final class LifecycleConformance {

    /** Sequences a run plays, each realizer alike. */
    public static final int SEQUENCES = 1_000;
    /** Hostile enough that every rule is exercised: a write in seven fails, a wake in three is refused. */
    public static final LifecycleWorld.Trouble TROUBLE = new LifecycleWorld.Trouble(0.15, 0.3, 0.03, 3);

    private LifecycleConformance() {}

    /**
     * One seeded sequence: 60 seconds of changing decisions under {@code trouble}, then 30 calm ones with the last
     * decision held; returns the rules it broke, each naming the seed, and where the pods did not reach the decision.
     */
    public static List<Throwable> sequence(long seed, LifecycleWorld.Trouble trouble,
            Optional<LifecycleWorld.Mirror> mirror) {
        SoftAssertions softly = new SoftAssertions();
        Random random = new Random(seed);
        LifecycleWorld world = new LifecycleWorld(random, trouble, mirror);
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
        softly.assertThat(world.violations).as(as).isEmpty();
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
            softly.assertThat(lastKeptMark).as(as + ": the kept mark before the parks").isLessThan(firstPark);
            softly.assertThat(plan.delete()).as(as + ": only refused pods are replaced").allMatch(Instance::wakeFailed);
        }
        InstanceLifecycle end = world.truth();
        softly.assertThat(end.servingCount()).as(as + ": serving").isEqualTo(desired);
        softly.assertThat(end.parkedCount()).as(as + ": parked").isEqualTo(parked);
        List<Instance> inPath = end.instances().stream().filter(p -> !p.deleting() && p.parkedAt().isPresent()
                && p.path() != Path.OUT).toList();
        if (desired == 0 && parked > 0) {
            softly.assertThat(inPath).as(as + ": one parked pod left in the request path").hasSize(1);
            Phase kept = lastKept ? Phase.KEPT : Phase.PARKED_IN;
            softly.assertThat(inPath).as(as).allMatch(p -> p.phase() == kept);
        } else {
            softly.assertThat(inPath).as(as + ": no parked pod in the path beside serving ones").isEmpty();
        }
        return softly.errorsCollected();
    }
}
