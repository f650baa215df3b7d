package io.dilu.extender;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.EnumMap;
import java.util.Map;

/**
 * Requests the extender turned down, by reason ({@code dilu_extender_refused_total{reason}}): a rise in
 * {@code bad-body} or {@code bind-mismatch} means something other than kube-scheduler is talking to the extender,
 * or a scheduler of another version. {@code unknown-pod} also counts pods the watch had not seen yet when the
 * scheduler asked (a few in a burst of new pods is normal).
 */
@ApplicationScoped
@Startup // so that every reason is exported (at 0) from the start, before the first request
public class Refusals {

    /** The reasons: a fixed, small set, so the metric stays cheap whatever a caller sends. */
    public enum Reason {
        /** HTTP 400: no body, malformed JSON, a field missing or malformed. */
        BAD_BODY("bad-body"),
        /** HTTP 4xx other than a bad body: unknown path, wrong method or media type. */
        BAD_REQUEST("bad-request"),
        /** Asked before Nodes and Pods were read: the scheduler retries. */
        NOT_SYNCED("not-synced"),
        /** The pod named is not one the watch (or, at filter, the API server) knows under that namespace, name and UID. */
        UNKNOWN_POD("unknown-pod"),
        /** The pod is bound or finished already: there is nothing to place. */
        NOT_PENDING("not-pending"),
        /** Bind of a Dilu pod with no reservation under its UID. */
        BIND_UNRESERVED("bind-unreserved"),
        /** Bind names another pod than the one the UID's reservation was made for. */
        BIND_MISMATCH("bind-mismatch"),
        /** Bind to another node than the one reserved. */
        BIND_OTHER_NODE("bind-other-node"),
        /** Bind of a pod that is being bound or is bound already. */
        BIND_BUSY("bind-busy"),
        /** Bind to a node that does not exist. */
        UNKNOWN_NODE("unknown-node"),
        /** HTTP 500: a fault of the extender, logged with its stack trace. */
        INTERNAL("internal-error");

        private final String tag;

        Reason(String tag) {
            this.tag = tag;
        }
    }

    private final Map<Reason, Counter> counters = new EnumMap<>(Reason.class);

    public Refusals(MeterRegistry metrics) {
        for (Reason r : Reason.values()) {
            counters.put(r, Counter.builder("dilu_extender_refused_total").description("requests the extender refused")
                    .tag("reason", r.tag).register(metrics));
        }
    }

    public void count(Reason reason) {
        counters.get(reason).increment();
    }
}
