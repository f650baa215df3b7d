package io.dilu.e2e.isolation;

import io.dilu.core.contract.DiluNames;
import io.dilu.e2e.isolation.ControlPlaneAttacks.Attack;
import io.dilu.e2e.isolation.ControlPlaneAttacks.Outcome;
import io.dilu.kube.ParkingPatch;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Attacks on what the scheduler extender books (issue 45): pods being deleted whose containers run on, and parked
 * memory another tenant's placements take. Against the real extender on the real API server of
 * {@link ControlPlaneAttacks}, on its one node of one 40,960 MiB GPU. No kubelet runs there: the test writes what the
 * kubelet would (a pod's container statuses), and a pod deleted with a grace period stays Terminating, as it does on
 * a node while its containers run out that period. Parking is written as the autoscaler writes it ({@link ParkingPatch}).
 */
final class BookingAttacks {

    static final String VICTIM = "booking-victim";
    static final String ATTACKER = "booking-attacker";
    private static final long DAY_SECONDS = 86_400;

    private final KubernetesClient client;
    private final HttpClient http;
    private final int extenderPort;
    private final String node;

    BookingAttacks(RealApiServer api, HttpClient http, int extenderPort, String node) {
        this.client = api.client();
        this.http = http;
        this.extenderPort = extenderPort;
        this.node = node;
        // Namespaces the webhook is kept away from: the pods are the extender's to place, as created.
        for (String ns : List.of(VICTIM, ATTACKER)) {
            api.createNamespace(ns, Map.of(DiluNames.WEBHOOK_LABEL, DiluNames.WEBHOOK_DISABLED));
        }
    }

    void addTo(Map<String, Attack> all) {
        // Escape 2: the booking of a pod being deleted, while its containers may run.
        all.put("terminating-pod-grace-in-spec", () -> terminating("terminating-pod-grace-in-spec",
                p -> p.editSpec().withTerminationGracePeriodSeconds(DAY_SECONDS).endSpec(), Deletion.PLAIN, Status.RUNNING));
        all.put("terminating-pod-grace-in-delete", () -> terminating("terminating-pod-grace-in-delete",
                UnaryOperator.identity(), Deletion.DAY_GRACE, Status.RUNNING));
        all.put("terminating-pod-before-its-status", () -> terminating("terminating-pod-before-its-status",
                p -> p.editSpec().withTerminationGracePeriodSeconds(DAY_SECONDS).endSpec(), Deletion.PLAIN, Status.NONE));
        all.put("terminating-pod-init-container-running", () -> terminating("terminating-pod-init-container-running",
                p -> p.editSpec().withTerminationGracePeriodSeconds(DAY_SECONDS).addNewInitContainer().withName("init")
                        .withImage("registry.local/fn:1").endInitContainer().endSpec(), Deletion.PLAIN, Status.INIT_RUNNING));
        // Harm 7: another namespace's parked memory, taken by a placement.
        all.put("parked-eviction-beyond-the-ask", this::evictionBeyondTheAsk);
        all.put("parked-eviction-own-first", this::evictionOwnFirst);
        all.put("parked-eviction-two-for-one-ask", this::evictionTwoForOneAsk);
    }

    private enum Deletion { PLAIN, DAY_GRACE }

    /** What the kubelet has said of the pod's containers when it is deleted. */
    private enum Status { RUNNING, NONE, INIT_RUNNING }

    /**
     * A 60% / 30,000 MiB pod is placed and bound, then deleted while its containers run; a second one like it asks for
     * the GPU. Contained: refused while the first runs, placed once the kubelet says the first's containers ended.
     */
    private Outcome terminating(String name, UnaryOperator<PodBuilder> edit, Deletion deletion, Status status)
            throws Exception {
        Pod first = placed(ATTACKER, name + "-a", 60, 30_000, edit);
        try {
            switch (status) {
                case RUNNING -> containers(first, "running", "server");
                case INIT_RUNNING -> containers(first, "running", "init");
                case NONE -> { }
            }
            var resource = client.pods().inNamespace(ATTACKER).withName(first.getMetadata().getName());
            if (deletion == Deletion.DAY_GRACE) {
                resource.withGracePeriod(DAY_SECONDS).delete();
            } else {
                resource.delete();
            }
            Pod second = pending(ATTACKER, name + "-b", 60, 30_000, UnaryOperator.identity());
            try {
                // The extender's watch sees the deletion within moments; give it a second before asking.
                Thread.sleep(1000);
                awaitKnown(second);
                boolean refused = !fits(second);
                boolean stillThere = client.pods().inNamespace(ATTACKER).withName(first.getMetadata().getName()).get() != null;
                containers(first, "terminated", "*");
                boolean freed = awaitFits(second);
                return new Outcome(name, refused && stillThere && freed, String.format(
                        "a 60%% / 30,000 MiB pod deleted (%s) while %s: the next such pod %s; once its containers "
                                + "ended, %s", deletion == Deletion.DAY_GRACE ? "grace 86,400 s in the delete"
                                : "its grace period " + grace(first) + " s", switch (status) {
                                    case RUNNING -> "its container runs";
                                    case NONE -> "the kubelet has said nothing of its containers";
                                    case INIT_RUNNING -> "its init container runs";
                                }, refused ? "refused (booked)" : "PLACED ON THE SAME GPU",
                        freed ? "placed" : "STILL REFUSED"));
            } finally {
                gone(second);
            }
        } finally {
            gone(first);
        }
    }

    private static String grace(Pod pod) {
        Long g = pod.getSpec().getTerminationGracePeriodSeconds();
        return g == null ? "30" : Long.toString(g);
    }

    /**
     * Another namespace serves a 500 MiB pod on the GPU and keeps one 30,000 MiB model parked beside it (a GPU that
     * nothing but parked pods held would go back); a 30% / 12,000 MiB pod asks for it, with 10,460 MiB free. Contained:
     * not placed there, the parked pod untouched (before: evicted, 2.5× what was asked).
     */
    private Outcome evictionBeyondTheAsk() throws Exception {
        return besideParked("keeper", 500, List.of(new Cache(VICTIM, "cache", 30, 30_000)), "asks-12000", 30, 12_000,
                scene -> new Outcome("parked-eviction-beyond-the-ask", !scene.placed() && scene.untouched(0),
                        String.format("a 12,000 MiB ask beside another namespace's 30,000 MiB parked pod: %s; the parked "
                                + "pod %s", scene.placed() ? "PLACED" : "not placed",
                                scene.untouched(0) ? "untouched" : "EVICTED")));
    }

    /**
     * Beside another namespace's serving 500 MiB pod, it parked a 30,000 MiB model first, the attacker a 9,000 MiB one
     * later; the attacker asks 10,000 MiB with 1,460 free. Contained: placed in its own parked memory, the other's
     * untouched (before: the one parked longest ago went, the other namespace's).
     */
    private Outcome evictionOwnFirst() throws Exception {
        return besideParked("keeper", 500, List.of(new Cache(VICTIM, "older-cache", 30, 30_000),
                new Cache(ATTACKER, "own-cache", 30, 9_000)), "asks-10000", 30, 10_000, scene -> {
                    boolean othersKept = scene.untouched(0);
                    boolean ownGone = !scene.untouched(1);
                    return new Outcome("parked-eviction-own-first", scene.placed() && othersKept && ownGone,
                            String.format("a 10,000 MiB ask beside its own 9,000 MiB parked pod and another namespace's "
                                    + "older 30,000 MiB one: %s; its own %s, the other's %s",
                                    scene.placed() ? "placed" : "NOT PLACED", ownGone ? "evicted" : "kept",
                                    othersKept ? "untouched" : "EVICTED"));
                });
    }

    /**
     * Another namespace serves a 23,000 MiB pod and keeps two 8,000 MiB models parked beside it; a 10,000 MiB pod asks,
     * with 1,960 MiB free: one parked model is not enough, both are 16,000 MiB of another's cache for a 10,000 MiB
     * ask. Contained: not placed, both untouched (before: both evicted, the two for one).
     */
    private Outcome evictionTwoForOneAsk() throws Exception {
        return besideParked("big-keeper", 23_000, List.of(new Cache(VICTIM, "cache-1", 20, 8_000),
                new Cache(VICTIM, "cache-2", 20, 8_000)), "asks-two", 10, 10_000,
                scene -> new Outcome("parked-eviction-two-for-one-ask", !scene.placed() && scene.evicted() == 0,
                        String.format("a 10,000 MiB ask where only another namespace's two 8,000 MiB parked pods make "
                                + "room: %s; %d of them evicted", scene.placed() ? "PLACED" : "not placed",
                                scene.evicted())));
    }

    /** A model another pod keeps parked, in the order it was parked. */
    private record Cache(String namespace, String name, int sm, long memoryMib) { }

    /** What became of an ask beside parked pods: placed or not, and which of them are still there, in their order. */
    private record Scene(boolean placed, List<Boolean> kept) {
        boolean untouched(int cache) {
            return kept.get(cache);
        }

        int evicted() {
            return (int) kept.stream().filter(k -> !k).count();
        }
    }

    /**
     * The victim serves a pod on the GPU (so that the GPU is not one only parked pods hold, which would go back), the
     * caches are parked beside it in order, and the attacker asks; judged once the extender had time to evict.
     */
    private Outcome besideParked(String keeperName, long keeperMib, List<Cache> caches, String askName, int askSm,
            long askMib, Function<Scene, Outcome> judge) throws Exception {
        List<Pod> made = new ArrayList<>();
        try {
            made.add(serving(VICTIM, keeperName, 10, keeperMib));
            List<Pod> parked = new ArrayList<>();
            for (Cache c : caches) {
                Pod pod = parked(c.namespace(), c.name(), c.sm(), c.memoryMib());
                made.add(pod);
                parked.add(pod);
            }
            Pod ask = pending(ATTACKER, askName, askSm, askMib, UnaryOperator.identity());
            made.add(ask);
            awaitKnown(ask);
            boolean placed = fits(ask);
            Thread.sleep(500);
            List<Boolean> kept = new ArrayList<>();
            for (Pod pod : parked) {
                kept.add(untouched(pod));
            }
            return judge.apply(new Scene(placed, kept));
        } finally {
            for (Pod pod : made.reversed()) {
                gone(pod);
            }
        }
    }

    private boolean untouched(Pod pod) {
        Pod now = client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).get();
        return now != null && now.getMetadata().getDeletionTimestamp() == null;
    }

    /** Placed, bound and running. */
    private Pod serving(String ns, String name, int sm, long memoryMib) throws Exception {
        Pod pod = placed(ns, name, sm, memoryMib, UnaryOperator.identity());
        containers(pod, "running", "server");
        return pod;
    }

    /** Placed, bound, running, then parked as the autoscaler parks it; booked at its memory once the extender saw it. */
    private Pod parked(String ns, String name, int sm, long memoryMib) throws Exception {
        Pod pod = serving(ns, name, sm, memoryMib);
        var resource = client.pods().inNamespace(ns).withName(name);
        resource.patch(PatchContext.of(PatchType.JSON_MERGE), ParkingPatch.park(pod.getMetadata().getUid(), Instant.now()));
        resource.subresource("status").patch(PatchContext.of(PatchType.JSON), ParkingPatch.servingCondition(
                pod.getMetadata().getUid(), resource.get().getStatus().getConditions(), false, "Parked", "parked", Instant.now()));
        Thread.sleep(1000);
        return resource.get();
    }

    /** Created, placed on the node by the extender's filter and bound by its bind. */
    private Pod placed(String ns, String name, int sm, long memoryMib, UnaryOperator<PodBuilder> edit) throws Exception {
        Pod pod = pending(ns, name, sm, memoryMib, edit);
        if (!awaitFits(pod)) {
            throw new IllegalStateException(ns + "/" + name + " found no room: " + post("filter", filterArgs(pod)));
        }
        String bound = post("bind", "{\"PodName\":\"" + name + "\",\"PodNamespace\":\"" + ns + "\",\"PodUID\":\""
                + pod.getMetadata().getUid() + "\",\"Node\":\"" + node + "\"}");
        if (bound.contains("\"Error\":\"") && !bound.contains("\"Error\":\"\"")) {
            throw new IllegalStateException("bind of " + ns + "/" + name + " refused: " + bound);
        }
        return client.pods().inNamespace(ns).withName(name).get();
    }

    /** A pending pod no scheduler places: the extender's to answer for. */
    private Pod pending(String ns, String name, int sm, long memoryMib, UnaryOperator<PodBuilder> edit) {
        Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(sm)),
                DiluNames.GPU_MEMORY, new Quantity(Long.toString(memoryMib)));
        Pod pod = edit.apply(new PodBuilder().withNewMetadata().withName(name).withNamespace(ns).endMetadata()
                .withNewSpec().withSchedulerName("nobody-schedules-this").withAutomountServiceAccountToken(false)
                .addNewContainer().withName("server").withImage("registry.local/fn:1").withNewResources()
                .withLimits(share).withRequests(share).endResources().endContainer().endSpec()).build();
        return client.pods().inNamespace(ns).resource(pod).create();
    }

    /**
     * The kubelet's word on the pod's containers: {@code which} ({@code "*"}: every one) {@code running} or
     * {@code terminated}, the rest waiting.
     */
    private void containers(Pod pod, String state, String which) {
        String now = Instant.now().toString();
        String stateJson = state.equals("running") ? "{\"running\":{\"startedAt\":\"" + now + "\"}}"
                : "{\"terminated\":{\"exitCode\":137,\"startedAt\":\"" + now + "\",\"finishedAt\":\"" + now + "\"}}";
        String waiting = "{\"waiting\":{\"reason\":\"PodInitializing\"}}";
        List<String> app = new ArrayList<>();
        List<String> init = new ArrayList<>();
        for (var c : pod.getSpec().getContainers()) {
            app.add(status(c.getName(), which.equals("*") || c.getName().equals(which) ? stateJson : waiting));
        }
        for (var c : pod.getSpec().getInitContainers()) {
            init.add(status(c.getName(), which.equals("*") || c.getName().equals(which) ? stateJson : waiting));
        }
        String patch = "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[" + String.join(",", app) + "]"
                + (init.isEmpty() ? "" : ",\"initContainerStatuses\":[" + String.join(",", init) + "]") + "}}";
        client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName())
                .subresource("status").patch(PatchContext.of(PatchType.STRATEGIC_MERGE), patch);
    }

    private static String status(String name, String state) {
        return "{\"name\":\"" + name + "\",\"image\":\"registry.local/fn:1\",\"imageID\":\"\",\"ready\":false,"
                + "\"restartCount\":0,\"state\":" + state + "}";
    }

    /** Until the extender's watch knows the pod: its prioritize answers 200 for a pod it knows. */
    private void awaitKnown(Pod pod) throws Exception {
        for (long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos(); System.nanoTime() < deadline; ) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort
                    + "/prioritize")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(filterArgs(pod))).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) {
                Thread.sleep(500);
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the extender never knew " + pod.getMetadata().getName());
    }

    private boolean fits(Pod pod) throws Exception {
        String answer = post("filter", filterArgs(pod));
        return answer.contains("\"NodeNames\":[\"" + node + "\"");
    }

    /** Asks until the extender places it, for as long as its watch may take to see what changed. */
    private boolean awaitFits(Pod pod) throws Exception {
        for (long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos(); System.nanoTime() < deadline; ) {
            if (fits(pod)) {
                return true;
            }
            Thread.sleep(200);
        }
        return false;
    }

    /** Gone from the API server, as the kubelet removes a pod whose containers ended; and from the extender's book. */
    private void gone(Pod pod) throws InterruptedException {
        client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).withGracePeriod(0)
                .delete();
        Thread.sleep(300);
    }

    private String filterArgs(Pod pod) {
        return "{\"Pod\":" + Serialization.asJson(pod) + ",\"NodeNames\":[\"" + node + "\"]}";
    }

    private String post(String verb, String body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + extenderPort + "/" + verb))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        return r.body();
    }
}
