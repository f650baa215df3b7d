package io.dilu.kube.events;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import java.time.Instant;
import java.time.InstantSource;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Turns what a component has to say about pods into core/v1 Events, through an {@link EventThrottle}, and hands
 * them to a writer on an executor of the component's, so that the caller (a scheduling request, a sweep of the
 * node agent) never waits for the API server. No Kubernetes client here: the component passes the write.
 */
public final class PodEventRecorder {

    /** Longest message written: what events.k8s.io allows a note, and plenty for a person. */
    public static final int MAX_MESSAGE = 1024;

    /** Writes one Event to the API server; throws when it cannot. */
    @FunctionalInterface
    public interface Writer {
        void write(Event event);
    }

    /** What became of each occurrence, for the component's metrics and log. */
    public interface Listener {
        void written(PodEvent event);

        void failed(PodEvent event, RuntimeException cause);

        void dropped(PodEvent event);
    }

    /**
     * Who reports.
     *
     * @param component the Event's {@code source.component} and {@code reportingComponent}
     * @param instance its {@code reportingInstance}: the pod or node the component runs as
     * @param host the Event's {@code source.host} (the node, for the node agent), or null
     */
    public record Source(String component, String instance, String host) {}

    private final Source source;
    private final EventThrottle throttle;
    private final InstantSource clock;
    private final Writer writer;
    private final Executor executor;
    private final Listener listener;

    public PodEventRecorder(Source source, EventThrottle throttle, InstantSource clock, Writer writer, Executor executor,
            Listener listener) {
        this.source = source;
        this.throttle = throttle;
        this.clock = clock;
        this.writer = writer;
        this.executor = executor;
        this.listener = listener;
    }

    /** One occurrence: written now, or counted into a later event, or dropped when too many pods are waiting. */
    public void record(PodEvent event) {
        switch (throttle.offer(event, clock.instant())) {
            case EventThrottle.Decision.Send send -> write(send.emit());
            case EventThrottle.Decision.Wait w -> { }
            case EventThrottle.Decision.Drop d -> listener.dropped(event);
        }
    }

    /** Writes what waited and may go now; the component calls it every few seconds. */
    public void flush() {
        throttle.flush(clock.instant()).forEach(this::write);
    }

    private void write(EventThrottle.Emit emit) {
        Event event = toEvent(emit, source);
        try {
            executor.execute(() -> {
                try {
                    writer.write(event);
                    listener.written(emit.event());
                } catch (RuntimeException e) {
                    listener.failed(emit.event(), e);
                }
            });
        } catch (RejectedExecutionException e) {
            listener.failed(emit.event(), e); // shutting down
        }
    }

    /** The core/v1 Event for what the throttle let through, named by the API server after its pod. */
    public static Event toEvent(EventThrottle.Emit emit, Source source) {
        PodEvent e = emit.event();
        String message = emit.count() > 1
                ? e.message() + " (" + emit.count() + " times since " + seconds(emit.first()) + ")" : e.message();
        if (message.length() > MAX_MESSAGE) {
            message = message.substring(0, MAX_MESSAGE - 1) + "…";
        }
        return new EventBuilder()
                .withNewMetadata().withGenerateName(e.pod() + ".").withNamespace(e.namespace()).endMetadata()
                .withNewInvolvedObject().withApiVersion("v1").withKind("Pod").withNamespace(e.namespace())
                .withName(e.pod()).withUid(e.uid().isEmpty() ? null : e.uid()).endInvolvedObject()
                .withType(e.type().value()).withReason(e.reason()).withMessage(message)
                .withCount(emit.count()).withFirstTimestamp(seconds(emit.first())).withLastTimestamp(seconds(emit.last()))
                .withNewSource().withComponent(source.component()).withHost(source.host()).endSource()
                .withReportingComponent(source.component()).withReportingInstance(source.instance())
                .build();
    }

    /** Kubernetes' own timestamps are whole seconds. */
    private static String seconds(Instant t) {
        return t.truncatedTo(ChronoUnit.SECONDS).toString();
    }
}
