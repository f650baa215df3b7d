package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dilu.core.contract.DiluNames;
import io.dilu.testing.JsonSurgery;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.zjsonpatch.JsonPatch;
import java.util.Base64;
import java.util.Optional;
import java.util.OptionalLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class AdmissionHandlerTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final AdmissionHandler HANDLER = new AdmissionHandler(new AdmissionHandler.Cluster() {
        @Override
        public Optional<ProfileSpec> profile(String namespace, String name) {
            return Optional.empty();
        }

        @Override
        public PodValidator.Facts facts(String namespace) {
            return new PodValidator.Facts(OptionalLong.of(40_960), false);
        }
    }, Pods.HOOK);

    static String review(JsonNode pod) {
        ObjectNode r = JSON.createObjectNode().put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
        ObjectNode req = r.putObject("request").put("uid", "u-1").put("operation", "CREATE").put("namespace", "fns");
        req.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
        req.set("object", pod);
        return r.toString();
    }

    static JsonNode response(String body) throws Exception {
        JsonNode r = JSON.readTree(body);
        assertThat(r.path("apiVersion").asText()).isEqualTo("admission.k8s.io/v1");
        return r.path("response");
    }

    @Test
    void thePatchTurnsThePodIntoItsMutationAndIsEmptyTheSecondTime() throws Exception {
        JsonNode pod = JSON.valueToTree(Pods.gpuPod(30, 2048).build());
        JsonNode r = response(HANDLER.mutate(review(pod)).body());
        assertThat(r.path("uid").asText()).isEqualTo("u-1");
        assertThat(r.path("allowed").asBoolean()).isTrue();
        JsonNode patch = JSON.readTree(Base64.getDecoder().decode(r.path("patch").asText()));
        JsonNode patched = JsonPatch.apply(patch, pod);
        Pod mutated = JSON.treeToValue(patched, Pod.class);
        assertThat(mutated.getSpec().getSchedulerName()).isEqualTo("dilu-scheduler");
        assertThat(mutated.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60");
        JsonNode again = response(HANDLER.mutate(review(patched)).body());
        assertThat(again.has("patch")).as("idempotent").isFalse();
        assertThat(again.path("allowed").asBoolean()).isTrue();
    }

    @Test
    void aBadPodIsDeniedWithEveryReason() throws Exception {
        JsonNode pod = JSON.valueToTree(Pods.gpuPod(0, 99_999).build());
        JsonNode r = response(HANDLER.validate(review(pod)).body());
        assertThat(r.path("allowed").asBoolean()).isFalse();
        assertThat(r.path("status").path("message").asText()).contains("gpu-sm]=0").contains("gpu-memory]=99999");
    }

    /** Whatever arrives, the answer is an AdmissionReview that denies or carries a patch that applies. */
    @Property(tries = 1000)
    void malformedReviewsAreAnsweredNeverThrown(@ForAll("malformed") String body) throws Exception {
        for (AdmissionHandler.Answer a : new AdmissionHandler.Answer[] {HANDLER.mutate(body), HANDLER.validate(body)}) {
            JsonNode r = response(a.body());
            assertThat(r.has("allowed")).isTrue();
            if (r.has("patch")) {
                JsonNode object = JSON.readTree(body).path("request").path("object");
                JsonPatch.apply(JSON.readTree(Base64.getDecoder().decode(r.path("patch").asText())), object);
            } else if (!r.path("allowed").asBoolean()) {
                assertThat(r.path("status").path("message").asText()).isNotBlank();
            }
        }
    }

    @Provide
    Arbitrary<String> malformed() {
        String good = review(JSON.valueToTree(Pods.gpuPod(30, 2048).editMetadata()
                .addToAnnotations(DiluNames.SM_LIMIT, "60").endMetadata().build()));
        Arbitrary<String> annotations = Arbitraries.strings().ofMaxLength(12).map(v -> good.replace(
                "\"dilu.io/sm-limit\":\"60\"", "\"dilu.io/sm-limit\":" + JSON.valueToTree(v)));
        Arbitrary<String> quantities = Arbitraries.strings().ofMaxLength(8).map(v -> good.replace(
                "\"dilu.io/gpu-sm\":\"30\"", "\"dilu.io/gpu-sm\":" + JSON.valueToTree(v)));
        Arbitrary<String> truncated = Arbitraries.integers().between(0, good.length() - 1).map(n -> good.substring(0, n));
        Arbitrary<String> typed = Arbitraries.of("\"spec\":", "\"containers\":", "\"metadata\":", "\"request\":", "\"uid\":",
                "\"annotations\":", "\"resources\":").flatMap(key -> Arbitraries.of("null", "1", "\"x\"", "[]", "{}", "true")
                .map(v -> JsonSurgery.replaceValueAfter(good, key, v)));
        Arbitrary<String> junk = Arbitraries.strings().ofMaxLength(64);
        return Arbitraries.oneOf(annotations, quantities, truncated, typed, junk);
    }
}
