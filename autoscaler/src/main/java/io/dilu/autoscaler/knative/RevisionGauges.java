package io.dilu.autoscaler.knative;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** One revision's gauges, for operators: registered when the revision is first decided, removed when it goes. */
final class RevisionGauges {

    final AtomicInteger desired = new AtomicInteger();
    final AtomicInteger parked = new AtomicInteger();
    final AtomicInteger ready = new AtomicInteger();
    /** The request rate last measured (pods' own and the activators'). */
    final AtomicReference<Double> rate = new AtomicReference<>(0.0);
    private final List<Meter> meters;
    private final MeterRegistry registry;

    RevisionGauges(MeterRegistry registry, String namespace, String revision) {
        this.registry = registry;
        Tags tags = Tags.of("namespace", namespace, "revision", revision);
        this.meters = List.of(
                Gauge.builder("dilu_autoscaler_desired_pods", desired, AtomicInteger::get).tags(tags)
                        .description("instances the autoscaler asks for").register(registry),
                Gauge.builder("dilu_autoscaler_parked_pods", parked, AtomicInteger::get).tags(tags)
                        .description("parked instances the autoscaler asks for").register(registry),
                Gauge.builder("dilu_autoscaler_ready_pods", ready, AtomicInteger::get).tags(tags)
                        .description("ready instances it sees").register(registry),
                Gauge.builder("dilu_autoscaler_requests_per_second", rate, AtomicReference::get).tags(tags)
                        .description("the revision's request rate as last measured: what its pods served themselves "
                                + "and what the activators held").register(registry));
    }

    /** The revision went: its gauges go along. */
    void remove() {
        meters.forEach(registry::remove);
    }
}
