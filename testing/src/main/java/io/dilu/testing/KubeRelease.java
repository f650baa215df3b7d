package io.dilu.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Kubernetes release the tests, the local cluster and the demo run, read from where it is written once:
 * {@code e2e/kube/go.mod}'s requirement of {@code k8s.io/kubernetes}, from which {@code e2e/bin/kube-binaries}
 * builds the binaries.
 */
public final class KubeRelease {

    static final String MODULE = "k8s.io/kubernetes";

    private KubeRelease() {}

    /** The version under the repository {@code root}, without its leading {@code v} (e.g. {@code 1.36.5}). */
    public static String version(Path root) {
        Path goMod = root.resolve("e2e/kube/go.mod");
        try {
            return Files.readAllLines(goMod).stream()
                    .map(String::strip)
                    .map(line -> line.startsWith("require ") ? line.substring("require ".length()).strip() : line)
                    .map(line -> line.split("\\s+"))
                    .filter(f -> f.length >= 2 && f[0].equals(MODULE) && f[1].startsWith("v"))
                    .map(f -> f[1].substring(1))
                    .findFirst()
                    .orElseThrow(() -> new IllegalStateException("no requirement of " + MODULE + " in " + goMod));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + goMod, e);
        }
    }
}
