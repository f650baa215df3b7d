package io.dilu.e2e.chart;

import io.dilu.testing.KubeRelease;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes {@code dilu.yaml}, the single-file install for {@code kubectl apply -f}: the chart rendered with its
 * default values, but for the namespace (kubectl has no --create-namespace), for one Kubernetes version; and
 * {@code cluster/local/dilu-chart.yaml}, the chart as the local cluster installs it (its Kubernetes version, the
 * images built here, emulated GPUs), which {@code cluster/local}'s overlay patches for host networking.
 * {@code HelmChartTest} fails when either file is out of date.
 *
 * <p>Usage: {@code ReleaseManifest REPO_ROOT} rewrites both ({@code ./dilu release-manifest});
 * {@code ReleaseManifest REPO_ROOT KUBE_VERSION} prints the same for another Kubernetes version instead.
 */
public final class ReleaseManifest {

    /**
     * The Kubernetes version dilu.yaml is rendered for: it chooses the scheduler configuration's API version
     * (v1 from 1.25) and the kube-scheduler image (v1.31.0), which should match the cluster's own version.
     */
    public static final String KUBE_VERSION = "1.31.0";

    public static final String FILE = "dilu.yaml";

    /** The chart as the local cluster installs it, under the repository root. */
    public static final String LOCAL_FILE = "cluster/local/dilu-chart.yaml";

    /**
     * The values the local cluster installs the chart with: images built here and never pulled (kube-scheduler's
     * too, {@code ./dilu images}), emulated GPUs. Host networking and the API server's address are the overlay's.
     */
    static final Map<String, String> LOCAL_VALUES = Map.of("namespace.create", "true", "image.registry", "dilu.local",
            "image.pullPolicy", "Never", "scheduler.kubeScheduler.image.registry", "dilu.local", "emulation.enabled", "true");

    private ReleaseManifest() {
    }

    /** dilu.yaml's content for the chart under {@code root}. */
    public static String render(Path root, String kubeVersion) {
        String header = """
                # Dilu for Knative: everything it installs, for `kubectl apply -f dilu.yaml` (the namespace and the CRD
                # come first). Generated from charts/dilu with its default values and namespace.create=true, for
                # Kubernetes %s: kube-scheduler %s and its configuration's API version follow that version. For
                # another, `./dilu release-manifest 1.29.4 > dilu-1.29.yaml`, or install with Helm, which reads it
                # from the cluster (docs/install.md). Do not edit: `./dilu release-manifest` rewrites this file.
                """.formatted(kubeVersion, "v" + kubeVersion);
        return header + DiluChart.render(DiluChart.dir(root), kubeVersion, Map.of("namespace.create", "true"));
    }

    /** cluster/local/dilu-chart.yaml's content for the chart under {@code root}. */
    public static String renderLocal(Path root) {
        String kubeVersion = KubeRelease.version(root);
        String header = """
                # The chart as `./dilu cluster` installs it (cluster/local/kustomization.yaml patches it for host
                # networking): charts/dilu for Kubernetes %s with %s.
                # Do not edit: `./dilu release-manifest` rewrites this file.
                """.formatted(kubeVersion, new java.util.TreeMap<>(LOCAL_VALUES));
        return header + DiluChart.render(DiluChart.dir(root), kubeVersion, LOCAL_VALUES);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: ReleaseManifest REPO_ROOT [KUBE_VERSION]");
            System.exit(2);
        }
        Path root = Path.of(args[0]);
        if (args.length == 2) {
            System.out.print(render(root, args[1]));
            return;
        }
        Path out = root.resolve(FILE);
        Files.writeString(out, render(root, KUBE_VERSION));
        System.err.printf("release-manifest: wrote %s (Kubernetes %s)%n", out, KUBE_VERSION);
        Path local = root.resolve(LOCAL_FILE);
        Files.writeString(local, renderLocal(root));
        System.err.printf("release-manifest: wrote %s (the local cluster, Kubernetes %s)%n", local,
                KubeRelease.version(root));
    }
}
