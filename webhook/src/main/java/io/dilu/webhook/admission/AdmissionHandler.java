package io.dilu.webhook.admission;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.zjsonpatch.JsonDiff;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Answers AdmissionReview (v1) requests for Pods: a JSON Patch from {@link PodMutator}, or a denial naming every
 * problem {@link PodValidator} finds. Whatever arrives, the answer is a well-formed AdmissionReview: malformed
 * input is denied with what was wrong, and nothing escapes as an exception (the HTTP layer never sends a 5xx).
 */
public final class AdmissionHandler {

    /** What the handler asks of the cluster. */
    public interface Cluster {
        Optional<ProfileSpec> profile(String namespace, String name);

        PodValidator.Facts facts(String namespace);
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Cluster cluster;
    private final HookSettings hook;

    public AdmissionHandler(Cluster cluster, HookSettings hook) {
        this.cluster = cluster;
        this.hook = hook;
    }

    /** The outcome, for metrics. */
    public enum Outcome { ALLOWED, PATCHED, DENIED, MALFORMED }

    /** An answer and what it was. */
    public record Answer(String body, Outcome outcome) {}

    public Answer mutate(String body) {
        return handle(body, true);
    }

    public Answer validate(String body) {
        return handle(body, false);
    }

    private Answer handle(String body, boolean mutate) {
        String uid = "";
        try {
            JsonNode review = JSON.readTree(body == null ? "" : body);
            JsonNode request = review == null ? null : review.get("request");
            if (request == null || !request.isObject()) {
                return malformed(uid, "AdmissionReview.request is missing");
            }
            uid = request.path("uid").asText("");
            if (uid.isBlank()) {
                return malformed(uid, "AdmissionReview.request.uid is missing");
            }
            if (!"Pod".equals(request.path("kind").path("kind").asText()) || !"CREATE".equals(request.path("operation").asText("CREATE"))) {
                return new Answer(response(uid, true, null, null), Outcome.ALLOWED);
            }
            JsonNode object = request.get("object");
            if (object == null || !object.isObject()) {
                return malformed(uid, "AdmissionReview.request.object is not a Pod");
            }
            Pod pod = JSON.treeToValue(object, Pod.class);
            if (pod.getSpec() == null || pod.getMetadata() == null) {
                return malformed(uid, "AdmissionReview.request.object is a Pod without metadata or spec");
            }
            if (!PodMutator.concerns(pod)) {
                return new Answer(response(uid, true, null, null), Outcome.ALLOWED);
            }
            String namespace = Optional.ofNullable(pod.getMetadata().getNamespace()).filter(s -> !s.isBlank())
                    .orElse(request.path("namespace").asText(""));
            Optional<String> profileName = PodMutator.profileName(pod);
            Optional<ProfileSpec> profile = profileName.flatMap(n -> cluster.profile(namespace, n));
            return mutate ? patch(uid, pod, profile) : check(uid, pod, namespace, profileName, profile);
        } catch (Exception e) {
            // Malformed JSON, a field of the wrong type, a quantity that is not one: refuse, say why, never fail.
            return malformed(uid, "cannot read the pod: " + firstLine(e.getMessage()));
        }
    }

    private Answer patch(String uid, Pod pod, Optional<ProfileSpec> profile) {
        Pod mutated = PodMutator.mutate(pod, profile, hook);
        JsonNode patch = JsonDiff.asJson(JSON.valueToTree(pod), JSON.valueToTree(mutated));
        if (patch.isEmpty()) {
            return new Answer(response(uid, true, null, null), Outcome.ALLOWED);
        }
        return new Answer(response(uid, true, patch.toString(), null), Outcome.PATCHED);
    }

    private Answer check(String uid, Pod pod, String namespace, Optional<String> profileName, Optional<ProfileSpec> profile) {
        List<FieldError> errors = new java.util.ArrayList<>(PodValidator.validate(pod, cluster.facts(namespace)));
        if (profileName.isPresent() && profile.isEmpty()) {
            errors.add(new FieldError("metadata.annotations[" + PodMutator.PROFILE + "]", profileName.get(),
                    "the name of a GpuFunctionProfile in namespace " + namespace));
        }
        if (errors.isEmpty()) {
            return new Answer(response(uid, true, null, null), Outcome.ALLOWED);
        }
        return new Answer(response(uid, false, null,
                errors.stream().map(FieldError::message).collect(Collectors.joining("; "))), Outcome.DENIED);
    }

    private static Answer malformed(String uid, String message) {
        return new Answer(response(uid, false, null, message), Outcome.MALFORMED);
    }

    private static String response(String uid, boolean allowed, String patch, String denial) {
        ObjectNode review = JSON.createObjectNode();
        review.put("apiVersion", "admission.k8s.io/v1");
        review.put("kind", "AdmissionReview");
        ObjectNode response = review.putObject("response");
        response.put("uid", uid);
        response.put("allowed", allowed);
        if (patch != null) {
            response.put("patchType", "JSONPatch");
            response.put("patch", Base64.getEncoder().encodeToString(patch.getBytes(StandardCharsets.UTF_8)));
        }
        if (denial != null) {
            response.putObject("status").put("code", 400).put("message", denial);
        }
        return review.toString();
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "no detail";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
