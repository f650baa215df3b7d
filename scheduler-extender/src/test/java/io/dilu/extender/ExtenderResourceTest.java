package io.dilu.extender;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.kube.ClusterWatcher;
import io.dilu.extender.state.PlacementBook;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.testing.DocumentedMetrics;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The wire format kube-scheduler speaks (Go field names, no JSON tags), over real HTTP, against fabric8's mock API
 * server: the extender's informers watch it, binds write to it. Every body is also sent the way an attacker on the
 * pod's loopback would: malformed, forged, naming someone else's pod.
 */
@QuarkusTest
@WithTestResource(value = MockApiServer.class, scope = TestResourceScope.GLOBAL)
class ExtenderResourceTest {

    static final String NS = "fns";
    static final List<String> NODES = List.of("n0", "n1");

    @Inject
    PlacementBook book;

    @Inject
    ClusterWatcher watcher;

    @Inject
    ExtenderWarmUp warmUp;

    @Inject
    KubernetesClient client;

    @MockApiServer.Server
    KubernetesMockServer server;

    /** The management interface's root, {@code /q/}. */
    @TestHTTPResource(value = "/", management = true)
    URL management;

    @BeforeEach
    void nodes() {
        for (String n : NODES) {
            if (client.nodes().withName(n).get() == null) {
                List<GpuDevice> gpus = List.of(new GpuDevice(n + "-gpu0", 0, "A100", 40_960, 108));
                client.nodes().resource(new NodeBuilder().withNewMetadata().withName(n)
                        .withAnnotations(Map.of(DiluNames.GPU_INVENTORY, InventoryAnnotation.write(gpus))).endMetadata()
                        .build()).create();
            }
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> watcher.synced() && NODES.stream().allMatch(watcher::nodeExists)
                && book.nodeCount() >= NODES.size());
    }

    /** A pod on the API server, once the extender's watch has seen it. */
    Pod pod(String name, Map<String, String> resources) {
        Map<String, Quantity> limits = new LinkedHashMap<>();
        resources.forEach((k, v) -> limits.put(k, new Quantity(v)));
        Pod created = client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name)
                .withNamespace(NS).endMetadata().withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME)
                .addNewContainer().withName("c").withImage("x").withNewResources().withLimits(limits).endResources()
                .endContainer().endSpec().build()).create();
        assertThat(created.getMetadata().getUid()).isNotBlank();
        await().atMost(Duration.ofSeconds(30))
                .until(() -> watcher.pod(NS, name, created.getMetadata().getUid()).isPresent());
        return created;
    }

    Pod gpuPod(String name) {
        return pod(name, Map.of(DiluNames.GPU_SM, "30", DiluNames.GPU_MEMORY, "2048"));
    }

    /** ExtenderArgs as kube-scheduler sends them with nodeCacheCapable: the whole pod, the candidate names. */
    String args(Pod pod) {
        return "{\"Pod\":" + client.getKubernetesSerialization().asJson(pod) + ",\"Nodes\":null,\"NodeNames\":[\"n0\",\"n1\"]}";
    }

    static String bindArgs(String namespace, String name, String uid, String node) {
        return """
                {"PodName":"%s","PodNamespace":"%s","PodUID":"%s","Node":"%s"}""".formatted(name, namespace, uid, node);
    }

    static Response post(String path, String body) {
        return given().contentType(ContentType.JSON).body(body).post(path);
    }

    /** The API server requests made while {@code action} ran, as "METHOD path". */
    List<String> apiCallsDuring(Runnable action) throws InterruptedException {
        while (server.takeRequest(20, TimeUnit.MILLISECONDS) != null) {
            // drain what the informers and earlier tests asked
        }
        action.run();
        List<String> calls = new ArrayList<>();
        for (RecordedRequest r; (r = server.takeRequest(200, TimeUnit.MILLISECONDS)) != null; ) {
            calls.add(r.getMethod() + " " + r.getPath());
        }
        return calls;
    }

    double refused(String reason) {
        String metrics = given().get(management + "metrics").then().statusCode(200).extract().asString();
        Matcher m = Pattern.compile("dilu_extender_refused_total\\{reason=\"" + Pattern.quote(reason) + "\"} ([0-9.E]+)")
                .matcher(metrics);
        assertThat(m.find()).as("refusal counter for %s exported", reason).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void theDocumentsMetricListIsWhatIsExported() {
        post("/filter", "{}").then().statusCode(400); // the resource, and its counters, exist once asked
        String metrics = given().get(management + "metrics").then().statusCode(200).extract().asString();
        assertThat(DocumentedMetrics.differences(DocumentedMetrics.of(DocumentedMetrics.doc("scheduler-extender.md")),
                metrics, "dilu_")).isEmpty();
    }

    @Test
    void aGpuPodIsFilteredToOneNodeRankedFirstAndBoundWithItsGpus() {
        Pod p = gpuPod("gpu-a");
        String uid = p.getMetadata().getUid();
        var filter = post("/filter", args(p)).then().statusCode(200).extract().jsonPath();
        List<String> passed = filter.getList("NodeNames", String.class);
        assertThat(passed).hasSize(1);
        assertThat(filter.getMap("FailedNodes")).isEmpty();
        var scores = post("/prioritize", args(p)).then().statusCode(200).extract().jsonPath();
        assertThat(scores.getList("Host", String.class)).containsExactlyElementsOf(passed);
        assertThat(scores.getList("Score", Long.class)).containsExactly(10L);

        String answer = post("/bind", bindArgs(NS, "gpu-a", uid, passed.getFirst())).then().statusCode(200).extract().asString();
        assertThat(answer).as("kube-scheduler reads an empty Error as success").isEqualTo("{}");
        assertThat(client.pods().inNamespace(NS).withName("gpu-a").get().getMetadata().getAnnotations())
                .containsEntry(DiluNames.ASSIGNED_GPUS, passed.getFirst() + "-gpu0");
        assertThat(book.bookings()).containsKey(PlacementBook.Phase.BOUND);
    }

    @Test
    void aPodWithoutDiluResourcesPassesThroughAndIsBoundOnlyToANodeThatExists() throws Exception {
        Pod p = pod("plain", Map.of("cpu", "1"));
        var filter = post("/filter", args(p)).then().statusCode(200).extract().jsonPath();
        assertThat(filter.getList("NodeNames", String.class)).containsExactly("n0", "n1");
        assertThat(filter.getMap("FailedNodes")).isEmpty();

        List<String> calls = apiCallsDuring(() -> assertThat(post("/bind", bindArgs(NS, "plain", p.getMetadata().getUid(),
                "no-such-node")).then().statusCode(200).extract().jsonPath().getString("Error"))
                .isEqualTo("ExtenderBindingArgs.Node no-such-node is not a node of the cluster"));
        assertThat(calls).as("nothing reaches the API server").isEmpty();
        calls = apiCallsDuring(() -> assertThat(post("/bind", bindArgs(NS, "plain", p.getMetadata().getUid(), "n1"))
                .then().statusCode(200).extract().asString()).isEqualTo("{}"));
        assertThat(calls).containsExactly("POST /api/v1/namespaces/" + NS + "/bindings");
    }

    @Test
    void aBindNamingAnotherPodIsRefusedAndLeavesTheReservationAsItWas() throws Exception {
        Pod victim = gpuPod("victim");
        String uid = victim.getMetadata().getUid();
        String node = post("/filter", args(victim)).then().statusCode(200).extract().jsonPath()
                .getList("NodeNames", String.class).getFirst();
        var reserved = book.placement(uid).orElseThrow();
        double before = refused("bind-mismatch");

        List<String> calls = apiCallsDuring(() -> {
            for (String forged : List.of(bindArgs(NS, "attacker", uid, node), bindArgs("other-ns", "victim", uid, node))) {
                assertThat(post("/bind", forged).then().statusCode(200).extract().jsonPath().getString("Error"))
                        .contains("is not the pod whose GPUs are reserved under PodUID " + uid)
                        .contains("must be " + NS + "/victim");
            }
        });
        assertThat(calls).as("a refused bind calls no API").isEmpty();
        assertThat(book.placement(uid)).contains(reserved);
        assertThat(refused("bind-mismatch")).isEqualTo(before + 2);
        // The real bind still works: the reservation was left in place.
        assertThat(post("/bind", bindArgs(NS, "victim", uid, node)).then().statusCode(200).extract().asString())
                .isEqualTo("{}");
    }

    @Test
    void aDiluPodWithoutAReservationIsNeverBoundAndNoCallReachesTheApiServer() throws Exception {
        Pod p = gpuPod("unreserved");
        List<String> calls = apiCallsDuring(() -> assertThat(post("/bind", bindArgs(NS, "unreserved",
                p.getMetadata().getUid(), "no-such-node")).then().statusCode(200).extract().jsonPath().getString("Error"))
                .contains("no GPU is reserved for PodUID " + p.getMetadata().getUid()));
        assertThat(calls).isEmpty();
        calls = apiCallsDuring(() -> assertThat(post("/bind", bindArgs(NS, "made-up", "0000-1111", "n0")).then()
                .statusCode(200).extract().jsonPath().getString("Error")).contains("not in the Dilu extender's view"));
        assertThat(calls).isEmpty();
    }

    @Test
    void readyOnlyOnceTheClusterIsReadAndTheFilterPathWarmedUp() {
        await().atMost(Duration.ofSeconds(30)).until(() -> given().get(management + "health/ready").statusCode() == 200);
        assertThat(watcher.synced()).isTrue();
        assertThat(warmUp.done()).isTrue();
    }

    @Test
    void aPodTheWatchHasNotDeliveredYetIsReadOnceAndPlaced() throws Exception {
        // On the API server (an expectation answers its GET) but never in the watch: kube-scheduler's watch
        // was faster than ours.
        Pod lagging = new PodBuilder().withNewMetadata().withName("lagging").withNamespace(NS).withUid("lagging-uid")
                .endMetadata().withNewSpec().withSchedulerName(DiluNames.SCHEDULER_NAME).addNewContainer().withName("c")
                .withImage("x").withNewResources().addToLimits(DiluNames.GPU_SM, new Quantity("30"))
                .addToLimits(DiluNames.GPU_MEMORY, new Quantity("2048")).endResources().endContainer().endSpec().build();
        server.expect().get().withPath("/api/v1/namespaces/" + NS + "/pods/lagging").andReturn(200, lagging).always();
        assertThat(watcher.pod(NS, "lagging", "lagging-uid")).isEmpty();
        List<String> calls = apiCallsDuring(() -> assertThat(post("/filter", args(lagging)).then().statusCode(200)
                .extract().jsonPath().getList("NodeNames", String.class)).hasSize(1));
        assertThat(calls).containsExactly("GET /api/v1/namespaces/" + NS + "/pods/lagging");
        assertThat(book.placement("lagging-uid")).isPresent();
        // The same name under another UID is another pod: nothing is reserved for it.
        var forged = post("/filter", args(new PodBuilder(lagging).editMetadata().withUid("other-uid").endMetadata()
                .build())).then().statusCode(200).extract().jsonPath();
        assertThat(forged.getString("Error")).contains("nothing was reserved");
        assertThat(book.placement("other-uid")).isEmpty();
    }

    @Test
    void unknownPodsReserveNothing() {
        Pod real = gpuPod("real");
        double before = refused("unknown-pod");
        int bookedBefore = book.activeUsage().size();
        for (String forged : List.of(
                args(new PodBuilder(real).editMetadata().withUid("made-up-uid").endMetadata().build()),
                args(new PodBuilder(real).editMetadata().withName("no-such-pod").endMetadata().build()),
                args(new PodBuilder(real).editMetadata().withNamespace("elsewhere").endMetadata().build()))) {
            var answer = post("/filter", forged).then().statusCode(200).extract().jsonPath();
            assertThat(answer.getString("Error")).contains("is not in the Dilu extender's view of the cluster")
                    .contains("nothing was reserved");
            assertThat(answer.getList("NodeNames")).isNull();
        }
        assertThat(book.placement("made-up-uid")).isEmpty();
        assertThat(book.placement(real.getMetadata().getUid())).isEmpty();
        assertThat(book.activeUsage()).hasSize(bookedBefore);
        assertThat(refused("unknown-pod")).isEqualTo(before + 3);
    }

    @Test
    void aShareOutOfRangeIsRefusedNamingTheResourceAndReservesNothing() {
        for (String sm : List.of("4294967346", "1e999999999")) {
            Pod p = pod("huge-" + sm.replace('e', 'x'), Map.of(DiluNames.GPU_SM, sm, DiluNames.GPU_MEMORY, "2048"));
            var answer = post("/filter", args(p)).then().statusCode(200).extract().jsonPath();
            assertThat(answer.getList("NodeNames", String.class)).as(sm).isEmpty();
            assertThat(answer.getMap("FailedNodes", String.class, String.class)).as(sm).containsOnlyKeys(NODES)
                    .allSatisfy((node, reason) -> assertThat(reason).contains("dilu.io/gpu-sm").contains("1..100"));
            assertThat(book.placement(p.getMetadata().getUid())).as(sm).isEmpty();
        }
        // The body is not trusted for the share: a body that claims 30% for a pod that asks for 4294967346 is refused.
        Pod p = pod("claims-less", Map.of(DiluNames.GPU_SM, "4294967346"));
        Pod forged = new PodBuilder(p).editSpec().editFirstContainer().editResources()
                .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("30"))).endResources().endContainer().endSpec().build();
        assertThat(post("/filter", args(forged)).then().statusCode(200).extract().jsonPath()
                .getList("NodeNames", String.class)).isEmpty();
        assertThat(book.placement(p.getMetadata().getUid())).isEmpty();
    }

    @Test
    void aBindThatOutlastsTheBindTimeoutIsRolledBack() {
        Pod p = gpuPod("slow");
        String uid = p.getMetadata().getUid();
        String node = post("/filter", args(p)).then().statusCode(200).extract().jsonPath()
                .getList("NodeNames", String.class).getFirst();
        // The API server takes longer to answer than dilu.extender.bind-timeout (2s in the test profile).
        server.expect().get().delay(6, TimeUnit.SECONDS).withPath("/api/v1/namespaces/" + NS + "/pods/slow")
                .andReturn(200, p).once();
        String error = post("/bind", bindArgs(NS, "slow", uid, node)).then().statusCode(200).extract().jsonPath()
                .getString("Error");
        assertThat(error).contains("did not answer within dilu.extender.bind-timeout (2000ms)");
        assertThat(book.placement(uid)).as("GPUs released").isEmpty();
        assertThat(post("/filter", args(p)).then().statusCode(200).extract().jsonPath().getList("NodeNames", String.class))
                .as("placed again").hasSize(1);
    }

    @Test
    void everyBadBodyIsA400NamingTheField() {
        String pod = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u-1\"}}";
        String[][] cases = {
                {"/filter", "", "the request body is missing"},
                {"/filter", "null", "the request body is missing"},
                {"/filter", "{\"Pod\":", "not valid JSON"},
                {"/filter", "{\"Pod\": [1,2]}", "not valid JSON for this request at Pod"},
                {"/filter", "{\"NodeNames\":[\"n0\"]}", "ExtenderArgs.Pod is missing"},
                {"/filter", "{\"Pod\":{},\"NodeNames\":[\"n0\"]}", "ExtenderArgs.Pod.metadata is missing"},
                {"/filter", "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"}}}", "ExtenderArgs.Pod.metadata.uid is missing"},
                {"/filter", "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"}}}", "ExtenderArgs.Pod.metadata.namespace is missing"},
                {"/filter", "{\"Pod\":{\"metadata\":{\"name\":\"P\\n\",\"namespace\":\"ns\",\"uid\":\"u\"}}}",
                        "ExtenderArgs.Pod.metadata.name must be a Kubernetes object name"},
                {"/filter", "{\"Pod\":" + pod + "}", "ExtenderArgs.NodeNames is missing (and so is Nodes)"},
                {"/filter", "{\"Pod\":" + pod + ",\"NodeNames\":[\"n0\",null]}", "ExtenderArgs.NodeNames[1] is missing"},
                {"/filter", "{\"Pod\":" + pod + ",\"Nodes\":{\"items\":[{}]}}", "ExtenderArgs.Nodes.items[0].metadata is missing"},
                {"/filter", "{\"Pod\":" + pod + ",\"NodeNames\":" + "9".repeat(5000) + "}", "not valid JSON"},
                {"/prioritize", "", "the request body is missing"},
                {"/prioritize", "{\"Pod\":{\"metadata\":{}},\"NodeNames\":[]}", "ExtenderArgs.Pod.metadata.namespace is missing"},
                {"/bind", "", "the request body is missing"},
                {"/bind", "[]", "not valid JSON"},
                {"/bind", "{}", "ExtenderBindingArgs.PodNamespace is missing"},
                {"/bind", "{\"PodName\":\"p\",\"PodNamespace\":\"ns\"}", "ExtenderBindingArgs.PodUID is missing"},
                {"/bind", "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"u\"}", "ExtenderBindingArgs.Node is missing"},
                {"/bind", "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"u\\\"}]\",\"Node\":\"n0\"}",
                        "ExtenderBindingArgs.PodUID must be a pod UID"},
        };
        double before = refused("bad-body");
        for (String[] c : cases) {
            Response r = post(c[0], c[1]);
            assertThat(r.statusCode()).as("%s %s", c[0], c[1]).isEqualTo(400);
            assertThat(r.contentType()).startsWith("application/json");
            assertThat(r.jsonPath().getString("Error")).as("%s %s", c[0], c[1]).contains(c[2]);
        }
        assertThat(refused("bad-body")).isEqualTo(before + cases.length);
    }

    @Test
    void noMalformedBodyIsEverA5xx() {
        Pod p = gpuPod("fuzz");
        String[] valid = {args(p), bindArgs(NS, "fuzz", p.getMetadata().getUid(), "n0")};
        String[] hostile = {"1e999999999", "-1", "9".repeat(400), "4294967346", "true", "[]", "{}", "null", "\"\\u0000\"",
                "[".repeat(3000), "{\"a\":".repeat(2000), "\"" + "x".repeat(5000) + "\""};
        Random rnd = new Random(20261123);
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            String base = valid[i % 2];
            String body = switch (i % 5) {
                case 0 -> base.substring(0, rnd.nextInt(base.length())); // truncated
                case 1 -> { // one value of the body swapped for something hostile
                    Matcher m = Pattern.compile(":(\"[^\"]*\"|[0-9]+|null|\\[|\\{)").matcher(base);
                    List<int[]> spots = new ArrayList<>();
                    while (m.find()) {
                        spots.add(new int[] {m.start(1), m.end(1)});
                    }
                    int[] s = spots.get(rnd.nextInt(spots.size()));
                    yield base.substring(0, s[0]) + hostile[rnd.nextInt(hostile.length)] + base.substring(s[1]);
                }
                case 2 -> { // one character replaced
                    int at = rnd.nextInt(base.length());
                    yield base.substring(0, at) + (char) rnd.nextInt(128) + base.substring(at + 1);
                }
                case 3 -> hostile[rnd.nextInt(hostile.length)];
                default -> base.replace("\"n0\"", hostile[rnd.nextInt(hostile.length)]);
            };
            bodies.add(body.getBytes(StandardCharsets.UTF_8));
        }
        byte[] notUtf8 = new byte[64];
        rnd.nextBytes(notUtf8);
        bodies.add(notUtf8);
        for (byte[] body : bodies) {
            for (String path : List.of("/filter", "/prioritize", "/bind")) {
                Response r = given().contentType(ContentType.JSON).body(body).post(path);
                String shown = new String(body, 0, Math.min(body.length, 120), StandardCharsets.UTF_8);
                assertThat(r.statusCode()).as("%s %s", path, shown).isBetween(200, 499);
                assertThat(r.asString()).as("%s %s", path, shown).doesNotContain("at io.").doesNotContain("Exception");
            }
        }
    }
}
