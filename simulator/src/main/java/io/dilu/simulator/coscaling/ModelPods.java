package io.dilu.simulator.coscaling;

import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.lifecycle.InstanceLifecycle.Intent;
import java.time.Instant;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The co-scaling model's realizer: a function's instances in memory, by UID in the order they were created, and core's
 * plan ({@link InstanceLifecycle#plan}) carried out on them as the autoscaler's {@code PodLifecycle} carries it out on
 * pods through the API server. Core's {@code LifecycleConformance} runs the same sequences on both. A park gives the
 * instance's shares back in the pool and keeps its memory; a wake is asked, and answered by the pool where its memory is
 * ({@link FunctionRun}, the model's scheduler extender); a deletion frees all the instance books.
 */
final class ModelPods {

    private final Map<String, FunctionRun.Instance> byUid = new LinkedHashMap<>();
    private final FunctionRun.Pool pool;

    ModelPods(FunctionRun.Pool pool) {
        this.pool = pool;
    }

    /** The instances' lifecycle, as the autoscaler reads it from the pods. */
    InstanceLifecycle lifecycle() {
        return new InstanceLifecycle(byUid.values().stream().map(i -> i.facts).toList());
    }

    /** Every instance not gone, the oldest first. */
    Collection<FunctionRun.Instance> all() {
        return Collections.unmodifiableCollection(byUid.values());
    }

    Optional<FunctionRun.Instance> get(String uid) {
        return Optional.ofNullable(byUid.get(uid));
    }

    void add(FunctionRun.Instance instance) {
        if (byUid.putIfAbsent(instance.facts.uid(), instance) != null) {
            throw new IllegalStateException(instance.id + " is there already");
        }
    }

    /** The instance is gone (the caller frees what it booked); false when it was not there. */
    boolean remove(FunctionRun.Instance instance) {
        return byUid.remove(instance.facts.uid(), instance);
    }

    /**
     * Carries {@code intent} out at {@code now}, as the API server would take the write: false where the instance is
     * gone (its 404), and nothing changes.
     */
    boolean realize(Intent intent, Instant now) {
        FunctionRun.Instance instance = byUid.get(intent.pod().uid());
        if (instance == null) {
            return false;
        }
        InstanceLifecycle.Instance p = instance.facts;
        switch (intent) {
            case Intent.Park park -> {
                instance.facts = p.withFacts(Optional.of(now), false, false, p.path(), false);
                pool.park(instance);
            }
            case Intent.Wake wake -> {
                instance.facts = p.withFacts(Optional.empty(), true, false, p.path(), false);
                instance.readyAt = Double.NaN;
            }
            case Intent.Serving serving -> instance.facts = p.withFacts(p.parkedAt(), p.wakeAsked(), p.wakeFailed(),
                    serving.path(), false);
            case Intent.Delete delete -> {
                byUid.remove(p.uid());
                if (instance.placed) {
                    pool.release(instance);
                }
            }
        }
        return true;
    }
}
