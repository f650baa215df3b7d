package io.dilu.webhook.admission;

import io.dilu.kube.profile.ProfileSettings;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.JsonSurgery;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.zjsonpatch.JsonPatch;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class AdmissionHandlerTest {

    static final ObjectMapper JSON = new ObjectMapper();
    /** Namespace with the quota right. */
    static final String SLO_NS = "slo-fns";

    /**
     * The cluster as the handler sees it: no profiles but "bert" (slo) in any namespace, and "explode", whose
     * lookup fails the way a heap that runs out would.
     */
    static final AdmissionHandler HANDLER = new AdmissionHandler(new AdmissionHandler.Cluster() {
        @Override
        public Optional<ProfileSettings> profile(String namespace, String name) {
            if (name.equals("explode")) {
                throw new OutOfMemoryError("Java heap space");
            }
            return name.equals("bert")
                    ? Optional.of(new ProfileSettings("bert", 25, Optional.of(45), 6144, Optional.of(8), Optional.of("slo"), false, Optional.empty(), Optional.empty()))
                    : Optional.empty();
        }

        @Override
        public PodValidator.Facts facts(String namespace) {
            return new PodValidator.Facts(OptionalLong.of(40_960), false, quotaRights(namespace));
        }

        @Override
        public boolean quotaRights(String namespace) {
            return namespace.equals(SLO_NS);
        }

        @Override
        public Optional<Set<String>> configMapKeys(String namespace, String name) {
            return switch (name) {
                case "gpu-env" -> Optional.of(Set.of("MODEL", "NVIDIA_VISIBLE_DEVICES"));
                case "settings" -> Optional.of(Set.of("MODEL", "BATCH"));
                case "unreadable" -> throw new IllegalStateException("connection refused");
                default -> Optional.empty();
            };
        }
    }, Pods.POLICY);

    static byte[] review(JsonNode pod) {
        return review(pod, "fns");
    }

    static byte[] review(JsonNode pod, String namespace) {
        ObjectNode r = JSON.createObjectNode().put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
        ObjectNode req = r.putObject("request").put("uid", "u-1").put("operation", "CREATE").put("namespace", namespace);
        req.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
        req.set("object", pod);
        return r.toString().getBytes(StandardCharsets.UTF_8);
    }

    static byte[] update(Pod before, Pod after, String user, String subResource) {
        ObjectNode r = JSON.createObjectNode().put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
        ObjectNode req = r.putObject("request").put("uid", "u-2").put("operation", "UPDATE").put("namespace", "fns");
        if (subResource != null) {
            req.put("subResource", subResource);
        }
        req.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
        req.putObject("userInfo").put("username", user);
        req.set("object", JSON.valueToTree(after));
        req.set("oldObject", JSON.valueToTree(before));
        return r.toString().getBytes(StandardCharsets.UTF_8);
    }

    static JsonNode response(AdmissionHandler.Answer answer) throws Exception {
        JsonNode r = JSON.readTree(answer.body());
        assertThat(r.path("apiVersion").asText()).isEqualTo("admission.k8s.io/v1");
        return r.path("response");
    }

    static String denial(AdmissionHandler.Answer answer) throws Exception {
        JsonNode r = response(answer);
        assertThat(r.path("allowed").asBoolean()).as(answer.body()).isFalse();
        return r.path("status").path("message").asText();
    }

    static JsonNode patch(JsonNode r) {
        return readTree(Base64.getDecoder().decode(r.path("patch").asText()));
    }

    static JsonNode readTree(byte[] json) {
        try {
            return JSON.readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void thePatchTurnsThePodIntoItsMutationAndIsEmptyTheSecondTime() throws Exception {
        Pod original = Pods.gpuPod(30, 2048).editMetadata().withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata().build();
        JsonNode pod = JSON.valueToTree(original);
        JsonNode r = response(HANDLER.mutate(review(pod)));
        assertThat(r.path("uid").asText()).isEqualTo("u-1");
        assertThat(r.path("allowed").asBoolean()).isTrue();
        JsonNode patched = JsonPatch.apply(patch(r), pod);
        Pod expected = PodMutator.mutate(original, Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).pod();
        assertThat(JSON.treeToValue(patched, Pod.class)).isEqualTo(expected);
        assertThat(expected.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60")
                .containsEntry(DiluNames.PRIORITY, "best-effort");
        JsonNode again = response(HANDLER.mutate(review(patched)));
        assertThat(again.has("patch")).as("idempotent").isFalse();
        assertThat(again.path("allowed").asBoolean()).isTrue();
        assertThat(response(HANDLER.validate(review(patched))).path("allowed").asBoolean()).as("its mutation passes").isTrue();
    }

    @Test
    void theQuotaRightComesFromTheNamespace() throws Exception {
        JsonNode serving = JSON.valueToTree(Pods.gpuPod(30, 2048).editMetadata()
                .withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata().build());
        JsonNode inSloNs = JsonPatch.apply(patch(response(HANDLER.mutate(review(serving, SLO_NS)))), serving);
        assertThat(inSloNs.path("metadata").path("annotations").path(DiluNames.PRIORITY).asText()).isEqualTo("slo");
        assertThat(response(HANDLER.validate(review(inSloNs, SLO_NS))).path("allowed").asBoolean()).isTrue();
        assertThat(denial(HANDLER.validate(review(inSloNs, "fns")))).isEqualTo("dilu.io/priority=slo is not allowed: must be "
                + "best-effort unless the namespace has the label dilu.io/allow-slo=true (granted by an administrator)");
        // A profile asking for slo: copied where the right is, refused by name where it is not.
        JsonNode named = JSON.valueToTree(new PodBuilder().withNewMetadata().withName("bert-1")
                .withAnnotations(Map.of(DiluNames.PROFILE, "bert")).endMetadata().withNewSpec().addNewContainer().withName("c")
                .withImage("bert").endContainer().endSpec().build());
        JsonNode bert = JsonPatch.apply(patch(response(HANDLER.mutate(review(named, "fns")))), named);
        assertThat(bert.path("metadata").path("annotations").path(DiluNames.PRIORITY).asText()).isEqualTo("best-effort");
        assertThat(denial(HANDLER.validate(review(bert, "fns")))).startsWith("metadata.annotations[dilu.io/profile]=bert is not "
                + "allowed: must be a GpuFunctionProfile that needs no quota right this namespace lacks; it gives dilu.io/priority=slo");
    }

    @Test
    void aGpuPodInANamespaceTheWebhookDoesNotCoverIsRefusedAndOnlyThat() throws Exception {
        JsonNode gpu = JSON.valueToTree(Pods.gpuPod(30, 1024).build());
        assertThat(denial(HANDLER.uncovered(review(gpu, "team-a")))).isEqualTo("metadata.namespace=team-a is not allowed: "
                + "must be labelled dilu.io/webhook=enabled by an administrator for a pod with a Dilu GPU share (only there "
                + "does admission check it)");
        JsonNode plain = JSON.valueToTree(new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec()
                .addNewContainer().withName("c").withImage("nginx").endContainer().endSpec().build());
        assertThat(response(HANDLER.uncovered(review(plain, "team-a"))).path("allowed").asBoolean()).isTrue();
        Pod created = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        assertThat(response(HANDLER.uncovered(update(created, created, "alice", null))).path("allowed").asBoolean())
                .as("UPDATEs are not its business").isTrue();
    }

    @Test
    void aPodThatTakesGpusByTheToolkitsVariablesIsRefusedInANamespaceTheWebhookDoesNotCoverToo() throws Exception {
        Pod env = new PodBuilder().withNewMetadata().withName("miner").endMetadata().withNewSpec().addNewContainer().withName("c")
                .withImage("cuda").addToEnv(new EnvVar("NVIDIA_VISIBLE_DEVICES", "all", null)).endContainer().endSpec().build();
        assertThat(denial(HANDLER.uncovered(review(JSON.valueToTree(env), "team-a")))).startsWith(
                "spec.containers[0](c).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed: must be void, none or empty");
        assertThat(denial(HANDLER.validate(review(JSON.valueToTree(env))))).startsWith(
                "spec.containers[0](c).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed");
        // By envFrom: the ConfigMap's keys are read (each by name, when the prefix could make a toolkit variable).
        Pod envFrom = new PodBuilder(env).editSpec().editFirstContainer().withEnv().addNewEnvFrom().withNewConfigMapRef()
                .withName("gpu-env").endConfigMapRef().endEnvFrom().endContainer().endSpec().build();
        assertThat(denial(HANDLER.uncovered(review(JSON.valueToTree(envFrom), "team-a"))))
                .startsWith("spec.containers[0](c).envFrom[0]=configMapRef gpu-env with prefix \"\", making NVIDIA_VISIBLE_DEVICES");
        Pod settings = new PodBuilder(env).editSpec().editFirstContainer().withEnv().addNewEnvFrom().withNewConfigMapRef()
                .withName("settings").endConfigMapRef().endEnvFrom().endContainer().endSpec().build();
        assertThat(response(HANDLER.uncovered(review(JSON.valueToTree(settings), "team-a"))).path("allowed").asBoolean()).isTrue();
        Pod unreadable = new PodBuilder(env).editSpec().editFirstContainer().withEnv().addNewEnvFrom().withNewConfigMapRef()
                .withName("unreadable").endConfigMapRef().endEnvFrom().endContainer().endSpec().build();
        assertThat(denial(HANDLER.validate(review(JSON.valueToTree(unreadable))))).contains("(it could not: connection refused; retry)");
        // More ConfigMaps than the webhook reads within its timeout: refused, never skipped.
        PodBuilder many = new PodBuilder(env).editSpec().editFirstContainer().withEnv().endContainer().endSpec();
        for (int i = 0; i <= ToolkitEnv.MAX_CONFIG_MAP_READS; i++) {
            many.editSpec().editFirstContainer().addNewEnvFrom().withNewConfigMapRef().withName("cm-" + i).endConfigMapRef()
                    .endEnvFrom().endContainer().endSpec();
        }
        assertThat(denial(HANDLER.uncovered(review(JSON.valueToTree(many.build()), "team-a"))))
                .startsWith("spec.containers[*].envFrom[*].configMapRef=17 ConfigMaps is not allowed: must be at most 16 ConfigMaps");
    }

    @Test
    void anEphemeralContainerIsJudgedInEveryNamespaceAndInTheLegacyForm() throws Exception {
        Pod plain = new PodBuilder().withNewMetadata().withName("web").withNamespace("team-a").endMetadata().withNewSpec()
                .addNewContainer().withName("c").withImage("nginx").endContainer().endSpec().build();
        Pod debugged = new PodBuilder(plain).editSpec().addNewEphemeralContainer().withName("debug").withImage("cuda")
                .addToEnv(new EnvVar("NVIDIA_VISIBLE_DEVICES", "all", null)).endEphemeralContainer().endSpec().build();
        assertThat(denial(HANDLER.uncovered(update(plain, debugged, "alice", "ephemeralcontainers"))))
                .startsWith("spec.ephemeralContainers[0](debug).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed");
        // API servers before 1.22 send the pod's metadata and ephemeral containers, as kind EphemeralContainers.
        Pod created = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        Pod privileged = new PodBuilder(created).editSpec().addNewEphemeralContainer().withName("debug").withImage("busybox")
                .withNewSecurityContext().withPrivileged(true).endSecurityContext().endEphemeralContainer().endSpec().build();
        assertThat(denial(HANDLER.validate(legacyUpdate(created, privileged)))).startsWith(
                "spec.ephemeralContainers[0](debug).securityContext.privileged=true is not allowed: must be false in a pod with a "
                        + "Dilu GPU share");
        assertThat(denial(HANDLER.uncovered(legacyUpdate(plain, debugged))))
                .startsWith("spec.ephemeralContainers[0](debug).env[NVIDIA_VISIBLE_DEVICES]=all is not allowed");
        Pod harmless = new PodBuilder(created).editSpec().addNewEphemeralContainer().withName("debug").withImage("busybox")
                .endEphemeralContainer().endSpec().build();
        assertThat(response(HANDLER.validate(legacyUpdate(created, harmless))).path("allowed").asBoolean()).isTrue();
    }

    /** An UPDATE of pods/ephemeralcontainers as Kubernetes 1.16 to 1.21 send it. */
    static byte[] legacyUpdate(Pod before, Pod after) {
        ObjectNode r = (ObjectNode) readTree(update(before, after, "alice", "ephemeralcontainers"));
        ObjectNode req = (ObjectNode) r.get("request");
        ((ObjectNode) req.get("kind")).put("kind", "EphemeralContainers");
        for (String field : List.of("object", "oldObject")) {
            JsonNode pod = req.get(field);
            ObjectNode legacy = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "EphemeralContainers");
            legacy.set("metadata", pod.get("metadata"));
            legacy.set("ephemeralContainers", pod.path("spec").path("ephemeralContainers"));
            req.set(field, legacy);
        }
        return r.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aBadPodIsDeniedWithEveryReason() throws Exception {
        JsonNode pod = JSON.valueToTree(Pods.gpuPod(0, 99_999).editSpec().withSchedulerName("dilu-scheduler").endSpec().build());
        assertThat(denial(HANDLER.validate(review(pod)))).contains("gpu-sm]=0").contains("gpu-memory]=99999");
        // An exponent a tenant hopes will be computed: read as text, refused at once, by mutate and validate alike.
        String huge = new String(review(pod), StandardCharsets.UTF_8).replace("\"dilu.io/gpu-sm\":\"0\"", "\"dilu.io/gpu-sm\":\"1e999999999\"");
        assertThat(response(HANDLER.mutate(huge.getBytes(StandardCharsets.UTF_8))).path("allowed").asBoolean()).isTrue();
        assertThat(denial(HANDLER.validate(huge.getBytes(StandardCharsets.UTF_8))))
                .startsWith("spec.containers[0](server).resources[dilu.io/gpu-sm]=1e999999999 is not allowed");
    }

    @Test
    void updatesMayNotChangeTheQuotaAnnotationsAndOnlyDilusWritersTheAssignedGpus() throws Exception {
        Pod created = Pods.mutated(Pods.gpuPod(30, 1024).build(), false);
        Pod slo = new PodBuilder(created).editMetadata().addToAnnotations(DiluNames.PRIORITY, "slo").endMetadata().build();
        assertThat(denial(HANDLER.validate(update(created, slo, "alice", null)))).isEqualTo("metadata.annotations[dilu.io/priority]="
                + "slo (was best-effort) is not allowed: must be unchanged: dilu.io/priority is fixed when the pod is created "
                + "(create a new pod to change it)");
        Pod assigned = new PodBuilder(created).editMetadata().addToAnnotations(DiluNames.ASSIGNED_GPUS, "GPU-7").endMetadata().build();
        JsonNode byAgent = response(HANDLER.validate(update(created, assigned, Pods.NODE_AGENT, null)));
        assertThat(byAgent.path("allowed").asBoolean()).isTrue();
        assertThat(byAgent.path("uid").asText()).isEqualTo("u-2");
        assertThat(denial(HANDLER.validate(update(created, assigned, "alice", null))))
                .startsWith("metadata.annotations[dilu.io/assigned-gpus]=GPU-7 (was absent) is not allowed");
        // Mutation is for CREATE only.
        assertThat(response(HANDLER.mutate(update(created, slo, "alice", null))).path("allowed").asBoolean()).isTrue();
        Pod debugged = new PodBuilder(created).editSpec().addNewEphemeralContainer().withName("debug").withImage("busybox")
                .addToEnv(new EnvVar("DILU_CONTROL_DIR", "/tmp", null)).endEphemeralContainer().endSpec().build();
        assertThat(denial(HANDLER.validate(update(created, debugged, "alice", "ephemeralcontainers"))))
                .startsWith("spec.ephemeralContainers[0](debug).env[DILU_CONTROL_DIR]=/tmp is not allowed");
    }

    @Test
    void aReviewOverTheSizeCapIsDeniedUnreadWithItsUid() throws Exception {
        ObjectNode pod = JSON.valueToTree(Pods.gpuPod(30, 1024).build());
        pod.with("metadata").with("annotations").put("padding", "x".repeat(3 * 1024 * 1024));
        byte[] body = review(pod);
        AdmissionHandler.Answer a = HANDLER.validate(body);
        assertThat(a.outcome()).isEqualTo(AdmissionHandler.Outcome.DENIED);
        assertThat(response(a).path("uid").asText()).isEqualTo("u-1");
        assertThat(denial(a)).isEqualTo("AdmissionReview=" + body.length + " bytes is not allowed: must be at most 3145728 bytes "
                + "(dilu.webhook.max-request-bytes; the API server's own limit for a request is 3 MiB)");
    }

    @Test
    void aPodWithTooManyContainersIsDeniedBeforeAnyWork() throws Exception {
        JsonNode pod = manyContainers(257);
        for (AdmissionHandler.Answer a : new AdmissionHandler.Answer[] {HANDLER.mutate(review(pod)), HANDLER.validate(review(pod))}) {
            assertThat(denial(a)).isEqualTo("spec.containers + spec.initContainers + spec.ephemeralContainers=257 containers is not "
                    + "allowed: must be at most 256 containers in all (dilu.webhook.max-containers)");
        }
    }

    /**
     * 256 GPU containers with some environment each, the most allowed: admitted, with a patch that grows with the
     * pod (its latency is {@code ./dilu bench webhook}'s to measure, not a unit test's).
     */
    @Test
    void theLargestPodAllowedIsAdmittedWithAPatchLinearInItsContainers() throws Exception {
        JsonNode pod = manyContainers(256);
        JsonNode r = response(HANDLER.mutate(review(pod)));
        JsonNode patched = JsonPatch.apply(patch(r), pod);
        assertThat(response(HANDLER.validate(review(patched))).path("allowed").asBoolean()).isTrue();
        // Five operations per container (its env is appended to, its securityContext added) and three for the pod
        // (annotations, scheduler, seccomp profile): nothing compares containers with each other.
        assertThat(patch(r).size()).isEqualTo(5 * 256 + 3);
    }

    static JsonNode manyContainers(int n) {
        ObjectNode pod = JSON.valueToTree(Pods.gpuPod(1, 64).build());
        ArrayNode containers = pod.with("spec").withArray("containers");
        ObjectNode first = (ObjectNode) containers.get(0);
        first.putArray("env").addObject().put("name", "MODEL").put("value", "resnet");
        for (int i = 1; i < n; i++) {
            containers.add(first.deepCopy().put("name", "c" + i));
        }
        return pod;
    }

    @Test
    void aFailureInsideTheHandlerIsADenialNotAnError() throws Exception {
        JsonNode pod = JSON.valueToTree(Pods.gpuPod(30, 1024).editMetadata().withAnnotations(Map.of(DiluNames.PROFILE, "explode"))
                .endMetadata().build());
        for (AdmissionHandler.Answer a : new AdmissionHandler.Answer[] {HANDLER.mutate(review(pod)), HANDLER.validate(review(pod))}) {
            assertThat(a.outcome()).isEqualTo(AdmissionHandler.Outcome.FAILED);
            assertThat(response(a).path("uid").asText()).isEqualTo("u-1");
            assertThat(denial(a)).isEqualTo("the webhook failed on this request (OutOfMemoryError) and refuses it rather than admit it unchecked");
            assertThat(a.body()).doesNotContain("at io.dilu").doesNotContain("Java heap space");
        }
    }

    /** Whatever arrives, the answer is an AdmissionReview that denies or carries a patch that applies. */
    @Property(tries = 1000)
    void malformedReviewsAreAnsweredNeverThrown(@ForAll("malformed") String body) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        for (AdmissionHandler.Answer a : new AdmissionHandler.Answer[] {HANDLER.mutate(bytes), HANDLER.validate(bytes)}) {
            JsonNode r = response(a);
            assertThat(r.has("allowed")).isTrue();
            assertThat(a.outcome()).isNotEqualTo(AdmissionHandler.Outcome.FAILED);
            if (r.has("patch")) {
                JsonNode object = JSON.readTree(body).path("request").path("object");
                JsonPatch.apply(patch(r), object);
            } else if (!r.path("allowed").asBoolean()) {
                assertThat(r.path("status").path("message").asText()).isNotBlank();
            }
        }
    }

    @Provide
    Arbitrary<String> malformed() {
        String good = new String(review(JSON.valueToTree(Pods.gpuPod(30, 2048).editMetadata()
                .addToAnnotations(DiluNames.SM_LIMIT, "60").endMetadata().build())), StandardCharsets.UTF_8);
        Arbitrary<String> annotations = Arbitraries.strings().ofMaxLength(12).map(v -> good.replace(
                "\"dilu.io/sm-limit\":\"60\"", "\"dilu.io/sm-limit\":" + JSON.valueToTree(v)));
        Arbitrary<String> quantities = Arbitraries.strings().ofMaxLength(8).map(v -> good.replace(
                "\"dilu.io/gpu-sm\":\"30\"", "\"dilu.io/gpu-sm\":" + JSON.valueToTree(v)));
        Arbitrary<String> truncated = Arbitraries.integers().between(0, good.length() - 1).map(n -> good.substring(0, n));
        Arbitrary<String> typed = Arbitraries.of("\"spec\":", "\"containers\":", "\"metadata\":", "\"request\":", "\"uid\":",
                "\"annotations\":", "\"resources\":", "\"operation\":", "\"env\":").flatMap(key -> Arbitraries.of("null", "1", "\"x\"",
                        "[]", "{}", "true", "\"UPDATE\"", "[null]").map(v -> JsonSurgery.replaceValueAfter(good, key, v)));
        Arbitrary<String> junk = Arbitraries.strings().ofMaxLength(64);
        return Arbitraries.oneOf(annotations, quantities, truncated, typed, junk);
    }
}
