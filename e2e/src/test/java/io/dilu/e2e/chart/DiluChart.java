package io.dilu.e2e.chart;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.databind.MappingIterator;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.TemplateCommand;
import io.dilu.testing.RealApiServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The chart {@code charts/dilu}, rendered offline by Helm as a library (helm-java), as the tests and dilu.yaml need it. */
public final class DiluChart {

    /** The release's name and namespace everywhere: docs/install.md installs it so. */
    public static final String RELEASE = "dilu";
    public static final String NAMESPACE = "dilu-system";

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private DiluChart() {
    }

    public static Path dir(Path root) {
        return root.resolve("charts/dilu");
    }

    public static Path dir() {
        return dir(RealApiServer.root());
    }

    /** {@code helm template dilu charts/dilu -n dilu-system --kube-version KUBE --set K=V...}. */
    public static String render(Path chart, String kubeVersion, Map<String, ?> values) {
        TemplateCommand template = new Helm(chart).template().withName(RELEASE).withNamespace(NAMESPACE)
                .withKubeVersion(kubeVersion);
        values.forEach(template::set);
        String out = template.call();
        return out == null ? "" : out; // helm-java answers null when nothing was rendered
    }

    public static String render(String kubeVersion, Map<String, ?> values) {
        return render(dir(), kubeVersion, values);
    }

    /**
     * The dilu-scheduler's KubeSchedulerConfiguration as the chart ships it for {@code kubeVersion} (its ConfigMap's
     * {@code scheduler-config.yaml}), rendered with the default values.
     */
    @SuppressWarnings("unchecked")
    public static String schedulerConfig(String kubeVersion) {
        return objects(render(kubeVersion, Map.of())).stream()
                .filter(o -> "ConfigMap".equals(o.get("kind"))
                        && "dilu-scheduler-config".equals(((Map<String, Object>) o.get("metadata")).get("name")))
                .map(o -> (String) ((Map<String, Object>) o.get("data")).get("scheduler-config.yaml"))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("the chart renders no dilu-scheduler-config ConfigMap"));
    }

    /** The objects of a multi-document YAML stream, as maps; empty documents left out. */
    @SuppressWarnings("unchecked")
    public static List<Map<String, Object>> objects(String yaml) {
        List<Map<String, Object>> all = new ArrayList<>();
        try (MappingIterator<Object> docs = YAML.readerFor(Object.class).readValues(yaml)) {
            while (docs.hasNext()) {
                if (docs.next() instanceof Map<?, ?> m && !m.isEmpty()) {
                    all.add((Map<String, Object>) m);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return all;
    }
}
