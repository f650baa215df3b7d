package io.dilu.webhook.admission;

import io.dilu.core.contract.DiluNames;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dilu.core.quota.FieldError;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import io.dilu.kube.profile.ProfileSettings;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * Answers AdmissionReview (v1) requests for Pods: on CREATE, a JSON Patch from {@link PodMutator} or a denial
 * naming every problem {@link PodValidator} finds; on UPDATE (validation only), a denial of what
 * {@link PodUpdateValidator} forbids. Whatever arrives, the answer is a well-formed AdmissionReview: input that is
 * too big, too many containers, malformed input, and any failure of the handler itself (an OutOfMemoryError
 * included) are denied with the reason. Nothing escapes as an exception, so the HTTP layer never sends a 5xx, and
 * no stack trace reaches the caller.
 */
public final class AdmissionHandler {

    private static final Logger LOG = Logger.getLogger(AdmissionHandler.class);

    /** What the handler asks of the cluster. */
    public interface Cluster {
        Optional<ProfileSettings> profile(String namespace, String name);

        PodValidator.Facts facts(String namespace);

        /** Whether the namespace has the quota right (the mutator needs nothing else of the cluster). */
        boolean quotaRights(String namespace);

        /**
         * The keys of a ConfigMap, read now (a blocking API call: never on the event loop); empty when it does not
         * exist. Throws when it cannot be read.
         */
        Optional<Set<String>> configMapKeys(String namespace, String name);
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String EPHEMERAL_CONTAINERS = "ephemeralcontainers";
    /**
     * What API servers before 1.22 send for an UPDATE of pods/ephemeralcontainers: the pod's metadata and its
     * {@code ephemeralContainers}, not the pod.
     */
    private static final String LEGACY_EPHEMERAL_KIND = "EphemeralContainers";

    private final Cluster cluster;
    private final AdmissionPolicy policy;

    public AdmissionHandler(Cluster cluster, AdmissionPolicy policy) {
        this.cluster = cluster;
        this.policy = policy;
    }

    /** The outcome, for metrics. */
    public enum Outcome { ALLOWED, PATCHED, DENIED, MALFORMED, FAILED }

    /** An answer and what it was. */
    public record Answer(String body, Outcome outcome) {}

    /** Which of the webhooks in webhooks.yaml asked. */
    private enum Review { MUTATE, VALIDATE, UNCOVERED }

    public Answer mutate(byte[] body) {
        return answer(body, Review.MUTATE);
    }

    public Answer validate(byte[] body) {
        return answer(body, Review.VALIDATE);
    }

    /**
     * A pod created in a namespace the webhook does not cover (not labelled {@code dilu.io/webhook=enabled}), or an
     * ephemeral container added to one: a pod asking for a Dilu GPU share is refused, since none of the other checks
     * ran on it, and so is a container that takes GPUs by the NVIDIA toolkit's variables ({@link ToolkitEnv});
     * anything else is allowed.
     */
    public Answer uncovered(byte[] body) {
        return answer(body, Review.UNCOVERED);
    }

    private Answer answer(byte[] body, Review kind) {
        String uid = "";
        try {
            byte[] bytes = body == null ? new byte[0] : body;
            if (bytes.length > policy.maxRequestBytes()) {
                uid = uidOf(bytes);
                return denied(uid, new FieldError("AdmissionReview", bytes.length + " bytes", "at most " + policy.maxRequestBytes()
                        + " bytes (dilu.webhook.max-request-bytes; the API server's own limit for a request is 3 MiB)").message());
            }
            JsonNode review = JSON.readTree(bytes);
            JsonNode request = review == null ? null : review.get("request");
            if (request == null || !request.isObject()) {
                return malformed(uid, "AdmissionReview.request is missing");
            }
            uid = request.path("uid").asText("");
            if (uid.isBlank()) {
                return malformed(uid, "AdmissionReview.request.uid is missing");
            }
            String objectKind = request.path("kind").path("kind").asText();
            boolean ephemeral = EPHEMERAL_CONTAINERS.equals(request.path("subResource").asText(""));
            if (!"Pod".equals(objectKind) && !(ephemeral && LEGACY_EPHEMERAL_KIND.equals(objectKind))) {
                return allowed(uid);
            }
            return switch (request.path("operation").asText("CREATE")) {
                case "CREATE" -> create(uid, request, kind);
                // Mutation is for CREATE only: an UPDATE that reaches /mutate is let through unchanged. A pod in an
                // uncovered namespace was refused a share at CREATE, and a pod's environment and security context
                // cannot change after it: of its UPDATEs only added ephemeral containers are judged.
                case "UPDATE" -> kind == Review.VALIDATE || kind == Review.UNCOVERED && ephemeral
                        ? update(uid, request, kind, ephemeral, LEGACY_EPHEMERAL_KIND.equals(objectKind)) : allowed(uid);
                default -> allowed(uid);
            };
        } catch (Exception e) {
            // Malformed JSON, a field of the wrong type, a quantity that is not one: refuse, say why, never fail.
            return malformed(uid, "cannot read the pod: " + PodValidator.clip(firstLine(e.getMessage())));
        } catch (Throwable t) {
            // An OutOfMemoryError, a StackOverflowError or a bug: the pod is refused rather than admitted unchecked,
            // and the caller learns what happened, not how (the trace is for this log only).
            LOG.errorf(t, "AdmissionReview %s failed; denied", uid);
            return new Answer(response(uid, false, null, "the webhook failed on this request (" + t.getClass().getSimpleName()
                    + ") and refuses it rather than admit it unchecked"), Outcome.FAILED);
        }
    }

    private Answer create(String uid, JsonNode request, Review kind) throws IOException {
        JsonNode object = request.get("object");
        if (object == null || !object.isObject()) {
            return malformed(uid, "AdmissionReview.request.object is not a Pod");
        }
        if (containerCount(object) > policy.maxContainers()) {
            return tooManyContainers(uid, object);
        }
        Pod pod = JSON.treeToValue(object, Pod.class);
        if (pod.getSpec() == null || pod.getMetadata() == null) {
            return malformed(uid, "AdmissionReview.request.object is a Pod without metadata or spec");
        }
        String namespace = namespace(request, pod);
        if (kind == Review.UNCOVERED) {
            if (PodMutator.concerns(pod)) {
                return denied(uid, new FieldError("metadata.namespace", namespace, "labelled " + DiluNames.WEBHOOK_LABEL + "="
                        + DiluNames.WEBHOOK_ENABLED + " by an administrator for a pod with a Dilu GPU share (only there does "
                        + "admission check it)").message());
            }
            List<ContainerView> containers = ContainerView.all(pod.getSpec());
            List<FieldError> errors = new ArrayList<>();
            ToolkitEnv.check(containers, read(namespace, containers, errors), false, errors);
            return judged(uid, errors);
        }
        Optional<String> profileName = PodMutator.profileName(pod);
        Optional<ProfileSettings> profile = profileName.flatMap(n -> cluster.profile(namespace, n));
        if (kind == Review.MUTATE) {
            if (!PodMutator.concerns(pod)) {
                return allowed(uid);
            }
            PodMutator.Mutation m = PodMutator.mutate(pod, profile, policy.hook(), cluster.quotaRights(namespace),
                    policy.etaViolation());
            return m.patch().isEmpty() ? allowed(uid)
                    : new Answer(response(uid, true, JSON.writeValueAsString(m.patch()), null), Outcome.PATCHED);
        }
        PodValidator.Facts facts = cluster.facts(namespace);
        List<FieldError> errors = new ArrayList<>();
        ToolkitEnv.ConfigMaps configMaps = read(namespace, ContainerView.all(pod.getSpec()), errors);
        errors.addAll(PodValidator.validate(pod, facts, policy, configMaps));
        profileName.ifPresent(n -> errors.addAll(PodValidator.profile(namespace, n, profile, facts.quotaRights(),
                policy.etaViolation())));
        return judged(uid, errors);
    }

    /**
     * @param ephemeral an UPDATE of pods/ephemeralcontainers
     * @param legacy its object is the pod's metadata and ephemeral containers, not the pod ({@link #LEGACY_EPHEMERAL_KIND})
     */
    private Answer update(String uid, JsonNode request, Review kind, boolean ephemeral, boolean legacy) throws IOException {
        JsonNode object = request.get("object");
        JsonNode old = request.get("oldObject");
        if (object == null || !object.isObject() || old == null || !old.isObject()) {
            return malformed(uid, "AdmissionReview.request.object and oldObject must both be Pods on UPDATE");
        }
        List<FieldError> errors = new ArrayList<>();
        if (kind == Review.VALIDATE) {
            errors.addAll(PodUpdateValidator.validate(annotations(old), annotations(object),
                    request.path("userInfo").path("username").asText(""), policy.assignedGpusWriters(),
                    policy.parkingWriters()));
        }
        if (ephemeral) {
            JsonNode after = legacy ? asPod(object) : object;
            if (containerCount(after) > policy.maxContainers()) {
                return tooManyContainers(uid, after);
            }
            Pod pod = JSON.treeToValue(after, Pod.class);
            if (pod.getMetadata() == null) {
                return malformed(uid, "AdmissionReview.request.object has no metadata");
            }
            String namespace = namespace(request, pod);
            List<ContainerView> added = PodValidator.addedEphemeralContainers(JSON.treeToValue(legacy ? asPod(old) : old, Pod.class)
                    .getSpec(), pod.getSpec());
            ToolkitEnv.ConfigMaps configMaps = read(namespace, added, errors);
            if (kind == Review.UNCOVERED) {
                ToolkitEnv.check(added, configMaps, false, errors);
            } else {
                // The quota annotations mark a Dilu pod for good (fixed at creation): the legacy object has no containers.
                boolean dilu = PodMutator.concerns(pod) || PodUpdateValidator.FIXED.stream().anyMatch(annotations(object)::containsKey);
                errors.addAll(PodValidator.ephemeralContainers(added, dilu, cluster.facts(namespace), policy, configMaps));
            }
        }
        return judged(uid, errors);
    }

    /** A legacy EphemeralContainers object as the pod it stands for: its metadata and its ephemeral containers. */
    private static JsonNode asPod(JsonNode ephemeralContainers) {
        ObjectNode pod = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "Pod");
        pod.set("metadata", ephemeralContainers.path("metadata").isObject() ? ephemeralContainers.get("metadata") : JSON.createObjectNode());
        JsonNode list = ephemeralContainers.get("ephemeralContainers");
        ObjectNode spec = pod.putObject("spec");
        if (list != null && !list.isNull()) {
            spec.set("ephemeralContainers", list);
        }
        return pod;
    }

    /**
     * The keys of the ConfigMaps whose keys decide the toolkit check of {@code containers}, at most
     * {@link ToolkitEnv#MAX_CONFIG_MAP_READS} of them (each is an API call, and the review must be answered within
     * the webhook's timeout: more are refused, never skipped).
     */
    private ToolkitEnv.ConfigMaps read(String namespace, List<ContainerView> containers, List<FieldError> errors) {
        Set<String> names = ToolkitEnv.configMapsToRead(containers);
        if (names.isEmpty()) {
            return ToolkitEnv.ConfigMaps.NONE;
        }
        if (names.size() > ToolkitEnv.MAX_CONFIG_MAP_READS) {
            errors.add(new FieldError("spec.containers[*].envFrom[*].configMapRef", names.size() + " ConfigMaps", "at most "
                    + ToolkitEnv.MAX_CONFIG_MAP_READS + " ConfigMaps whose keys the webhook must read (envFrom whose prefix could "
                    + "make " + ToolkitEnv.VISIBLE_DEVICES + " or another NVIDIA toolkit variable; a prefix such as APP_ needs no read)"));
            return ToolkitEnv.ConfigMaps.NONE;
        }
        Map<String, Set<String>> keys = new LinkedHashMap<>();
        Map<String, String> unreadable = new LinkedHashMap<>();
        for (String name : names) {
            try {
                cluster.configMapKeys(namespace, name).ifPresent(k -> keys.put(name, k));
            } catch (RuntimeException e) {
                unreadable.put(name, firstLine(e.getMessage()));
            }
        }
        return new ToolkitEnv.ConfigMaps(keys, unreadable);
    }

    private static Answer judged(String uid, List<FieldError> errors) {
        if (errors.isEmpty()) {
            return allowed(uid);
        }
        return denied(uid, errors.stream().map(FieldError::message).collect(Collectors.joining("; ")));
    }

    /** The API server's namespace for the request, which the pod cannot choose; the pod's own only if it is missing. */
    private static String namespace(JsonNode request, Pod pod) {
        String fromRequest = request.path("namespace").asText("");
        return !fromRequest.isBlank() ? fromRequest : Optional.ofNullable(pod.getMetadata().getNamespace()).orElse("");
    }

    /** Refused before any work on the pod: every container costs a pass of each check. */
    private Answer tooManyContainers(String uid, JsonNode pod) {
        return denied(uid, new FieldError("spec.containers + spec.initContainers + spec.ephemeralContainers",
                containerCount(pod) + " containers", "at most " + policy.maxContainers() + " containers in all (dilu.webhook.max-containers)")
                .message());
    }

    /** Counted on the JSON tree, before any of it is turned into a Pod. */
    private static int containerCount(JsonNode pod) {
        JsonNode spec = pod.path("spec");
        int n = 0;
        for (String kind : List.of("containers", "initContainers", "ephemeralContainers")) {
            JsonNode list = spec.path(kind);
            n += list.isArray() ? list.size() : 0;
        }
        return n;
    }

    private static Map<String, String> annotations(JsonNode pod) {
        JsonNode a = pod.path("metadata").path("annotations");
        Map<String, String> out = new LinkedHashMap<>();
        if (a.isMissingNode() || a.isNull()) {
            return out;
        }
        if (!a.isObject()) {
            throw new IllegalArgumentException("metadata.annotations is not an object");
        }
        for (Map.Entry<String, JsonNode> e : a.properties()) {
            if (!e.getValue().isTextual()) {
                throw new IllegalArgumentException("metadata.annotations[" + PodValidator.clip(e.getKey()) + "] is not a string");
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    /**
     * The request's uid, read by streaming past everything else, so that a review too big to read still gets a
     * denial the API server can match to its request.
     */
    private static String uidOf(byte[] body) {
        try (JsonParser p = JSON.getFactory().createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return "";
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if ("request".equals(field) && value == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String name = p.currentName();
                        if (p.nextToken() == JsonToken.VALUE_STRING && "uid".equals(name)) {
                            return p.getText();
                        }
                        p.skipChildren();
                    }
                    return "";
                }
                p.skipChildren();
            }
        } catch (IOException e) {
            // Not JSON, or cut short: there is no uid to answer to.
        }
        return "";
    }

    private static Answer allowed(String uid) {
        return new Answer(response(uid, true, null, null), Outcome.ALLOWED);
    }

    private static Answer denied(String uid, String message) {
        return new Answer(response(uid, false, null, message), Outcome.DENIED);
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
