package io.dilu.deviceplugin.agent;

import io.dilu.deviceplugin.tokens.TokenManager;
import io.dilu.kube.events.PodEvent;
import io.dilu.kube.events.PodEventRecorder;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the node tells pods through Kubernetes Events, from what it sees at each {@link #sweep} (every second):
 *
 * <ul>
 *   <li>{@value #THROTTLE_EMERGENCY} (Warning) on every pod with a share of a GPU whose token controller entered
 *       EMERGENCY since the last sweep: an SLO container's kernel launch cycle stretched past its threshold, and
 *       its best-effort neighbours are throttled;</li>
 *   <li>{@value #MEMORY_REFUSED} (Warning) on a pod whose hook refused GPU memory allocations for not fitting the
 *       container's share since the last sweep (the program sees only CUDA_ERROR_OUT_OF_MEMORY).</li>
 * </ul>
 *
 * <p>Only shares whose container is known are told about. The recorder's throttle keeps a tenant that triggers
 * these in a loop from flooding the API server. Counts, not states, are compared, so an emergency that began and
 * ended between two sweeps is still told; what happened before the agent started is not.
 */
final class NodeEvents {

    static final String THROTTLE_EMERGENCY = "DiluThrottleEmergency";
    static final String MEMORY_REFUSED = "DiluMemoryRefused";

    private final TokenManager tokens;
    private final Allocations allocations;
    private final NodePods pods;
    private final PodEventRecorder recorder;
    private final long[] emergencies;
    /** Refusals told so far, per share and device of its control block. */
    private final Map<String, Long> refusals = new HashMap<>();

    NodeEvents(int gpus, TokenManager tokens, Allocations allocations, NodePods pods, PodEventRecorder recorder) {
        this.tokens = tokens;
        this.allocations = allocations;
        this.pods = pods;
        this.recorder = recorder;
        this.emergencies = new long[gpus];
        for (int g = 0; g < gpus; g++) {
            emergencies[g] = tokens.gpu(g).emergencies();
        }
    }

    synchronized void sweep() {
        List<Allocations.Part> parts = allocations.parts();
        Map<ContainerRef.PodKey, String> uids = new HashMap<>();
        for (PodView p : pods.seen()) {
            uids.put(new ContainerRef.PodKey(p.namespace(), p.name()), p.uid());
        }
        for (int g = 0; g < emergencies.length; g++) {
            long now = tokens.gpu(g).emergencies();
            long entered = now - emergencies[g];
            emergencies[g] = now;
            if (entered <= 0) {
                continue;
            }
            for (Allocations.Part part : parts) {
                if (part.gpu() == g && told(part.allocation())) {
                    ContainerRef c = part.allocation().owner().get();
                    recorder.record(PodEvent.warning(c.namespace(), c.pod(), uids.get(c.podKey()), THROTTLE_EMERGENCY,
                            emergency(part, c, entered)));
                }
            }
        }
        Set<String> live = new HashSet<>();
        for (Allocations.Part part : parts) {
            String key = part.allocation().id() + "/" + part.tenant().device();
            live.add(key);
            long now = part.tenant().block().memoryRefusals(part.tenant().device());
            Long before = refusals.putIfAbsent(key, now);
            if (before == null) {
                continue; // first seen: what was refused before is not this agent's to tell
            }
            if (now < before) {
                refusals.put(key, now); // the tenant's page ran backwards: nothing to tell, start again from here
            } else if (now > before && told(part.allocation())) {
                refusals.put(key, now);
                ContainerRef c = part.allocation().owner().get();
                recorder.record(PodEvent.warning(c.namespace(), c.pod(), uids.get(c.podKey()), MEMORY_REFUSED,
                        "container " + c.container() + ": " + (now - before) + " GPU memory allocation(s) refused on "
                                + part.uuid() + ": they did not fit its share of " + part.memoryMib()
                                + " MiB (dilu.io/gpu-memory); the program saw CUDA_ERROR_OUT_OF_MEMORY"));
            }
        }
        refusals.keySet().retainAll(live);
    }

    /** A share is told about once its container is known, and while the kubelet lists it. */
    private static boolean told(Allocation a) {
        return a.owner().isPresent() && a.missingSince().isEmpty();
    }

    private static String emergency(Allocations.Part part, ContainerRef c, long entered) {
        String times = entered == 1 ? "" : " " + entered + " times";
        if (part.tenant().sloSensitive()) {
            return "GPU " + part.uuid() + " entered EMERGENCY" + times + ": the kernel launch cycle of an SLO container "
                    + "there stretched past its threshold; its best-effort neighbours are throttled, container "
                    + c.container() + " runs up to its limit";
        }
        return "GPU " + part.uuid() + " entered EMERGENCY" + times + ": the kernel launch cycle of an SLO neighbour "
                + "stretched past its threshold; container " + c.container() + " (best-effort) is throttled until "
                + "the neighbour recovers";
    }
}
