package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The KServe examples under {@code manifests/examples/} against KServe's own InferenceService schema (the CRD of
 * the release vendored in {@code kserve-crds/}) on a real kube-apiserver: each is accepted, and nothing it writes
 * is pruned — a misspelled or misplaced field would vanish silently on a real cluster, taking Dilu's resources,
 * class or profile with it. Only the schema is checked here, not KServe's admission webhook.
 */
class KServeExamplesIT {

    static final String ISVC_API = "serving.kserve.io/v1beta1";
    static final String DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode";
    static final String AUTOSCALER_CLASS = "serving.kserve.io/autoscalerClass";
    /** KServe's names since 0.16; {@code Serverless} and {@code RawDeployment} are the deprecated ones. */
    static final Set<String> MODES = Set.of("Knative", "Standard");
    static final Pattern DEPRECATED_MODE = Pattern.compile("deploymentMode\\W+(Serverless|RawDeployment)\\b");

    private static RealApiServer api;

    @BeforeAll
    static void start() throws IOException, URISyntaxException {
        api = RealApiServer.start();
        api.installCrd(Path.of(KServeExamplesIT.class.getResource("/kserve-crds/serving.kserve.io_inferenceservices.yaml").toURI()));
        api.installCrd(RealApiServer.manifests().resolve("crds").resolve("gpufunctionprofiles.dilu.io.yaml"));
    }

    @AfterAll
    static void stop() {
        if (api != null) {
            api.close();
        }
    }

    /** The example files holding an InferenceService. */
    static List<Path> kserveExamples() throws IOException {
        try (Stream<Path> files = Files.list(RealApiServer.manifests().resolve("examples"))) {
            List<Path> all = files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
            List<Path> kserve = new ArrayList<>();
            for (Path f : all) {
                if (load(f).stream().anyMatch(KServeExamplesIT::isInferenceService)) {
                    kserve.add(f);
                }
            }
            return kserve;
        }
    }

    static List<HasMetadata> load(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return api.client().load(in).items();
        }
    }

    static boolean isInferenceService(HasMetadata o) {
        return ISVC_API.equals(o.getApiVersion()) && "InferenceService".equals(o.getKind());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return o == null ? Map.of() : (Map<String, Object>) o;
    }

    static Map<String, Object> predictor(GenericKubernetesResource isvc) {
        return map(map(isvc.getAdditionalProperties().get("spec")).get("predictor"));
    }

    static String mode(HasMetadata isvc) {
        Map<String, String> a = isvc.getMetadata().getAnnotations();
        return a == null ? null : a.get(DEPLOYMENT_MODE);
    }

    /**
     * Where {@code written} differs from what the API server returned: each path (a.b[2].c) whose value is absent
     * or different in {@code stored}. Fields the server adds (its schema's defaults) are not differences.
     */
    static Set<String> lost(Object written, Object stored, String path) {
        Set<String> out = new TreeSet<>();
        if (written instanceof Map<?, ?> w) {
            if (!(stored instanceof Map<?, ?> s)) {
                out.add(path);
                return out;
            }
            w.forEach((k, v) -> out.addAll(lost(v, s.get(k), path.isEmpty() ? k.toString() : path + "." + k)));
        } else if (written instanceof List<?> w) {
            if (!(stored instanceof List<?> s) || s.size() != w.size()) {
                out.add(path);
                return out;
            }
            for (int i = 0; i < w.size(); i++) {
                out.addAll(lost(w.get(i), s.get(i), path + "[" + i + "]"));
            }
        } else if (!Objects.equals(written == null ? null : written.toString(), stored == null ? null : stored.toString())) {
            out.add(path);
        }
        return out;
    }

    /** Creates {@code isvc} and returns what the API server stored of it. */
    static GenericKubernetesResource createAndReadBack(GenericKubernetesResource isvc) {
        api.client().resource(isvc).create();
        return api.client().genericKubernetesResources(ISVC_API, "InferenceService")
                .inNamespace(isvc.getMetadata().getNamespace()).withName(isvc.getMetadata().getName()).get();
    }

    @Test
    void everyKServeExampleIsAcceptedAndWhatDiluReadsSurvivesPruning() throws IOException {
        List<Path> files = kserveExamples();
        Set<String> modes = new TreeSet<>();
        Set<String> namespaces = new TreeSet<>();
        for (Path f : files) {
            for (HasMetadata o : load(f)) {
                if (namespaces.add(o.getMetadata().getNamespace())) {
                    api.createNamespace(o.getMetadata().getNamespace(), Map.of());
                }
            }
            for (HasMetadata o : load(f)) {
                if (!isInferenceService(o)) {
                    // e.g. the GpuFunctionProfile that dilu.io/profile names: accepted by Dilu's own CRD.
                    assertThat(api.client().resource(o).create().getMetadata().getUid()).as("%s %s", f.getFileName(), o.getKind()).isNotBlank();
                    continue;
                }
                GenericKubernetesResource written = (GenericKubernetesResource) o;
                GenericKubernetesResource stored = createAndReadBack(written);
                String what = f.getFileName() + " " + written.getMetadata().getName();
                assertThat(lost(written.getAdditionalProperties().get("spec"), stored.getAdditionalProperties().get("spec"), "spec"))
                        .as("%s: fields the InferenceService schema pruned or changed", what).isEmpty();
                assertThat(stored.getMetadata().getAnnotations()).as(what).containsAllEntriesOf(written.getMetadata().getAnnotations());

                // What Dilu relies on, read from the stored object: the mode, a GPU share, and the way to Dilu's autoscaler.
                String mode = mode(stored);
                modes.add(mode);
                Map<String, Object> predictor = predictor(stored);
                Map<String, Object> resources = map(map(predictor.get("model")).get("resources"));
                assertThat(map(resources.get("requests"))).as("%s: predictor.model.resources.requests", what).containsKey("dilu.io/gpu-sm");
                assertThat(map(resources.get("limits"))).as("%s: predictor.model.resources.limits", what)
                        .containsEntry("dilu.io/gpu-sm", map(resources.get("requests")).get("dilu.io/gpu-sm"));
                assertThat(predictor.get("minReplicas")).as("%s: predictor.minReplicas", what).isNotNull();
                Map<String, Object> annotations = map(predictor.get("annotations"));
                if ("Knative".equals(mode)) {
                    assertThat(annotations).as("%s: predictor.annotations", what).containsEntry(KnativeNames.CLASS, DiluNames.AUTOSCALER_CLASS);
                    assertThat(((Number) predictor.get("minReplicas")).intValue())
                            .as("%s: scale from zero needs the activator path, not built yet", what).isGreaterThanOrEqualTo(1);
                } else {
                    assertThat(stored.getMetadata().getAnnotations()).as("%s: KServe's HPA off", what)
                            .hasEntrySatisfying(AUTOSCALER_CLASS, c -> assertThat(c).isIn("none", "external"));
                    assertThat(annotations).as("%s: no Knative in Standard mode", what).doesNotContainKey(KnativeNames.CLASS);
                }
            }
        }
        assertThat(modes).as("an example for each of KServe's current modes").isEqualTo(MODES);
    }

    @Test
    void noExampleUsesADeprecatedModeOrAScaleAnnotationKServeDrops() throws IOException {
        List<Path> files;
        try (Stream<Path> all = Files.list(RealApiServer.manifests().resolve("examples"))) {
            files = all.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertThat(kserveExamples()).isNotEmpty();
        for (Path f : files) {
            assertThat(DEPRECATED_MODE.matcher(Files.readString(f)).find()).as("%s names a deprecated deployment mode", f.getFileName()).isFalse();
            for (HasMetadata o : load(f)) {
                if (!isInferenceService(o)) {
                    continue;
                }
                assertThat(mode(o)).as("%s: %s", f.getFileName(), DEPLOYMENT_MODE).isIn(MODES);
                Map<String, Object> predictor = predictor((GenericKubernetesResource) o);
                Map<String, Object> all = new LinkedHashMap<>(map(predictor.get("annotations")));
                if (o.getMetadata().getAnnotations() != null) {
                    all.putAll(o.getMetadata().getAnnotations());
                }
                // KServe's ServiceAnnotationDisallowedList: these never reach Knative; minReplicas/maxReplicas do.
                assertThat(all).as("%s: use predictor.minReplicas/maxReplicas", f.getFileName())
                        .doesNotContainKeys(KnativeNames.MIN_SCALE, KnativeNames.MAX_SCALE,
                                "autoscaling.knative.dev/minScale", "autoscaling.knative.dev/maxScale");
            }
        }
    }

    /** The check above can fail: a field the schema does not know is pruned by the server and reported by path. */
    @Test
    void aMisspelledFieldIsPrunedAndCaught() throws IOException {
        api.createNamespace("misspelled", Map.of());
        Path knative = kserveExamples().stream().filter(f -> f.getFileName().toString().contains("knative")).findFirst().orElseThrow();
        GenericKubernetesResource isvc = (GenericKubernetesResource) load(knative).stream()
                .filter(KServeExamplesIT::isInferenceService).findFirst().orElseThrow();
        isvc.getMetadata().setNamespace("misspelled");
        Map<String, Object> predictor = predictor(isvc);
        Map<String, Object> model = new LinkedHashMap<>(map(predictor.get("model")));
        // "resource" for "resources", and minReplicas one level too high: both silently gone on a real cluster.
        model.put("resource", model.remove("resources"));
        predictor.put("model", model);
        map(isvc.getAdditionalProperties().get("spec")).put("minReplicas", 1);
        GenericKubernetesResource stored = createAndReadBack(isvc);
        assertThat(lost(isvc.getAdditionalProperties().get("spec"), stored.getAdditionalProperties().get("spec"), "spec"))
                .containsExactly("spec.minReplicas", "spec.predictor.model.resource");
    }
}
