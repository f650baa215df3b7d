package io.dilu.kube.events;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.logging.Logger;

/**
 * What became of a component's events, {@code dilu_pod_events_total{reason, outcome}} (exported at 0 from the
 * start), and a log line when writing them starts failing. The node agent and the extender each have one.
 */
public final class EventCounts implements PodEventRecorder.Listener {

    private static final Logger LOG = Logger.getLogger(EventCounts.class);

    private static final List<String> OUTCOMES = List.of("written", "failed", "dropped");

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private volatile boolean failing;

    /** @param reasons the reasons the component writes, whose counters are exported at 0 from the start */
    public EventCounts(MeterRegistry registry, List<String> reasons) {
        this.registry = registry;
        reasons.forEach(reason -> OUTCOMES.forEach(outcome -> counter(reason, outcome)));
    }

    private Counter counter(String reason, String outcome) {
        return counters.computeIfAbsent(reason + "/" + outcome, k -> Counter.builder("dilu_pod_events_total")
                .tag("reason", reason).tag("outcome", outcome)
                .description("events about pods: written, failed (the API server refused or did not answer), or "
                        + "dropped (too many pods at once); occurrences held back are counted in the next event of the pod")
                .register(registry));
    }

    @Override
    public void written(PodEvent event) {
        count(event, "written");
        failing = false;
    }

    @Override
    public void failed(PodEvent event, RuntimeException cause) {
        count(event, "failed");
        // Once per spell of failures at WARN: an API server that is away would otherwise fill the log.
        if (!failing) {
            LOG.warnf("cannot write the %s event of pod %s/%s: %s", event.reason(), event.namespace(), event.pod(),
                    cause.getMessage());
        } else {
            LOG.debugf("cannot write the %s event of pod %s/%s: %s", event.reason(), event.namespace(), event.pod(),
                    cause.getMessage());
        }
        failing = true;
    }

    @Override
    public void dropped(PodEvent event) {
        count(event, "dropped");
    }

    private void count(PodEvent event, String outcome) {
        counter(event.reason(), outcome).increment();
    }
}
