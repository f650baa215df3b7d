package io.dilu.extender;

import io.dilu.extender.api.ExtenderArgs;
import io.dilu.extender.api.ExtenderBindingArgs;
import io.dilu.extender.api.ExtenderBindingResult;
import io.dilu.extender.api.ExtenderFilterResult;
import io.dilu.extender.api.HostPriority;
import io.dilu.extender.kube.Binder;
import io.dilu.extender.kube.ClusterWatcher;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.PodShare;
import io.dilu.kube.PodShares;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * The kube-scheduler extender API (v1, JSON over HTTP): {@code filter}, {@code prioritize} and {@code bind}.
 * Pods that ask for no {@code dilu.io} resource pass through untouched.
 */
@Path("/")
@Consumes(MediaType.APPLICATION_JSON)
@Produces(MediaType.APPLICATION_JSON)
public class ExtenderResource {

    private static final Logger LOG = Logger.getLogger(ExtenderResource.class);

    private final PlacementBook book;
    private final ClusterWatcher watcher;
    private final Binder binder;
    private final InstantSource clock;
    private final Counter bindFailures;

    public ExtenderResource(PlacementBook book, ClusterWatcher watcher, Binder binder, InstantSource clock,
            MeterRegistry metrics) {
        this.book = book;
        this.watcher = watcher;
        this.binder = binder;
        this.clock = clock;
        this.bindFailures = Counter.builder("dilu_extender_bind_failures_total")
                .description("binds that failed and were rolled back").register(metrics);
    }

    @POST
    @Path("filter")
    public ExtenderFilterResult filter(ExtenderArgs args) {
        List<String> candidates = args.candidates();
        if (args.pod() == null || args.pod().getMetadata() == null) {
            return ExtenderFilterResult.error("ExtenderArgs.Pod is missing");
        }
        Optional<PodShare> share = PodShares.of(args.pod());
        if (share.isEmpty()) {
            return new ExtenderFilterResult(candidates, java.util.Map.of(), null);
        }
        if (!watcher.synced()) {
            return ExtenderFilterResult.error("the Dilu extender is still reading the cluster; retry");
        }
        PlacementBook.Filtered f = book.filter(share.get(), candidates, clock.instant());
        return new ExtenderFilterResult(f.node().map(List::of).orElse(List.of()), f.failed(), null);
    }

    /** The node reserved at filter gets the top score, so the scheduler's own scores cannot move the pod. */
    @POST
    @Path("prioritize")
    public List<HostPriority> prioritize(ExtenderArgs args) {
        Optional<String> reserved = args.pod() == null || args.pod().getMetadata() == null ? Optional.empty()
                : book.reservedNode(args.pod().getMetadata().getUid());
        // Nodes left out score 0; only the node holding the pod's reservation is worth naming.
        return reserved.filter(args.candidates()::contains).map(n -> List.of(new HostPriority(n, HostPriority.MAX_SCORE)))
                .orElse(List.of());
    }

    @POST
    @Path("bind")
    public ExtenderBindingResult bind(ExtenderBindingArgs args) {
        if (args.podName() == null || args.podNamespace() == null || args.podUid() == null || args.node() == null) {
            return new ExtenderBindingResult("ExtenderBindingArgs needs PodName, PodNamespace, PodUID and Node");
        }
        PlacementBook.BindPlan plan;
        if (book.reservedNode(args.podUid()).isPresent()) {
            plan = book.startBinding(args.podUid(), args.node());
        } else if (binder.asksForGpus(args.podNamespace(), args.podName())) {
            plan = book.startBinding(args.podUid(), args.node()); // refuses: nothing reserved, place it again
        } else {
            plan = null; // not a Dilu pod: bind it as the default binder would
        }
        try {
            if (plan instanceof PlacementBook.BindPlan.Refuse refuse) {
                return new ExtenderBindingResult(refuse.reason());
            }
            if (plan instanceof PlacementBook.BindPlan.Assign assign) {
                binder.annotate(args.podNamespace(), args.podName(), args.podUid(), assign.gpus());
            }
            binder.bind(args.podNamespace(), args.podName(), args.podUid(), args.node());
            if (plan != null) {
                book.bindSucceeded(args.podUid());
            }
            return ExtenderBindingResult.OK;
        } catch (KubernetesClientException e) {
            if (plan != null) {
                book.bindFailed(args.podUid());
            }
            bindFailures.increment();
            LOG.warnf("binding %s/%s to %s failed, GPUs released: %s", args.podNamespace(), args.podName(), args.node(),
                    e.getMessage());
            return new ExtenderBindingResult("binding failed: " + e.getMessage());
        }
    }
}
