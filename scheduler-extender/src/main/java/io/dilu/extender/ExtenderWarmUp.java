package io.dilu.extender;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderFilterResult;
import io.dilu.extender.api.HostPriority;
import io.dilu.kube.PodShares;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import org.jboss.logging.Logger;

/**
 * Reads a GPU pod's filter request at start, the way the HTTP layer will, before the extender reports ready.
 * The first request otherwise pays for Jackson learning the shape of the Pod model and for the interpreter:
 * on the local cluster the first pod's scheduling took 0.7 s (the event loop once stalled 3 s) against a
 * few milliseconds later. The answers are thrown away; nothing is reserved.
 */
@ApplicationScoped
public class ExtenderWarmUp {

    private static final Logger LOG = Logger.getLogger(ExtenderWarmUp.class);

    /** Enough rounds for the path to be compiled; a fraction of a second of CPU, once. */
    static final int ROUNDS = 300;

    private static final String ARGS = """
            {"Pod":{"metadata":{"name":"warm-up","namespace":"dilu-warm-up","uid":"warm-up-uid"},\
            "spec":{"schedulerName":"dilu-scheduler","containers":[{"name":"c","image":"example",\
            "resources":{"limits":{"dilu.io/gpu-sm":"10","dilu.io/gpu-memory":"1024"}}}]}},\
            "Nodes":null,"NodeNames":["node-a","node-b"]}""";

    private final ObjectMapper json;
    private volatile boolean done;

    public ExtenderWarmUp(ObjectMapper json) {
        this.json = json;
    }

    void warmUp(@Observes StartupEvent event) {
        long start = System.nanoTime();
        try {
            for (int i = 0; i < ROUNDS; i++) {
                ExtenderArgs args = json.readValue(ARGS, ExtenderArgs.class);
                args.podRef();
                PodShares.of(args.pod());
                json.writeValueAsString(new ExtenderFilterResult(args.candidates(), Map.of(), null));
                json.writeValueAsString(List.of(new HostPriority("node-a", HostPriority.MAX_SCORE)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("the warm-up request no longer reads: " + e.getMessage(), e);
        }
        done = true;
        LOG.debugf("filter path warmed up in %.0f ms", (System.nanoTime() - start) / 1e6);
    }

    /** Whether the warm-up has run. */
    public boolean done() {
        return done;
    }
}
