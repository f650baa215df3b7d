package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.lifecycle.InstanceLifecycle.Instance;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import io.dilu.core.lifecycle.LifecycleConformance;
import io.dilu.core.lifecycle.LifecycleWorld;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Core's lifecycle conformance sequences ({@link LifecycleConformance}) with the co-scaling model's realizer beside the
 * world's own, as the autoscaler's Kubernetes realizer runs them on a fake API server (its PodLifecycleConformanceTest):
 * every pod the world's cluster makes or changes is told to the model's instances, every intent is carried out on them
 * by {@link ModelPods}, and the instance read back must say what the world's realizer says. Its pool must be asked to
 * park each instance the world parks and to free each it deletes, and nothing else.
 */
class ModelPodsConformanceTest {

    @Test
    void theModelsRealizerGivesTheWorldsOutcomesOnEverySequence() {
        List<Throwable> broken = new ArrayList<>();
        for (long seed = 1; seed <= LifecycleConformance.SEQUENCES; seed++) {
            broken.addAll(LifecycleConformance.sequence(seed, LifecycleConformance.TROUBLE, Optional.of(new Model(seed))));
        }
        assertThat(broken).as("rules broken, each naming its seed").isEmpty();
    }

    /** A pool that books nothing and checks that it is asked only for what it holds, as the fleet's would throw. */
    static final class CheckedPool implements FunctionRun.Pool {
        final Set<String> booked = new HashSet<>();
        final List<String> wrong = new ArrayList<>();

        @Override
        public boolean place(FunctionRun.Instance instance) {
            return booked.add(instance.id) || wrong.add("placed twice: " + instance.id);
        }

        @Override
        public boolean wake(FunctionRun.Instance instance) {
            return booked.contains(instance.id) || wrong.add("woken, not booked: " + instance.id);
        }

        @Override
        public void park(FunctionRun.Instance instance) {
            if (!booked.contains(instance.id) || instance.facts.parkedAt().isEmpty()) {
                wrong.add("parked, not booked or without its park time: " + instance.id);
            }
        }

        @Override
        public void release(FunctionRun.Instance instance) {
            if (!booked.remove(instance.id)) {
                wrong.add("released, not booked: " + instance.id);
            }
        }
    }

    /** The world's pods as the model's instances: the cluster's changes are the kubelets' and the extender's. */
    private static final class Model implements LifecycleWorld.Mirror {
        private final long seed;
        private final CheckedPool pool = new CheckedPool();
        private final ModelPods pods = new ModelPods(pool);

        Model(long seed) {
            this.seed = seed;
        }

        @Override
        public void cluster(Instance pod) {
            Optional<FunctionRun.Instance> known = pods.get(pod.uid());
            if (pod.deleting()) {
                known.ifPresent(i -> {
                    pods.remove(i);
                    pool.release(i);
                });
                return;
            }
            known.ifPresentOrElse(i -> i.facts = pod, () -> {
                FunctionRun.Instance i = new FunctionRun.Instance(pod.uid(), null, pod);
                pool.place(i);
                i.placed = true;
                pods.add(i);
            });
        }

        @Override
        public Optional<Instance> realize(Intent intent, Instance pod, Instant now) {
            pods.realize(intent, now);
            assertThat(pool.wrong).as("seed " + seed + ": the pool asked only for what it holds").isEmpty();
            return pods.get(pod.uid()).map(i -> i.facts);
        }
    }
}
