package io.dilu.images;

import com.google.cloud.tools.jib.api.Containerizer;
import com.google.cloud.tools.jib.api.ImageReference;
import com.google.cloud.tools.jib.api.Jib;
import com.google.cloud.tools.jib.api.JibContainerBuilder;
import com.google.cloud.tools.jib.api.TarImage;
import com.google.cloud.tools.jib.api.buildplan.AbsoluteUnixPath;
import com.google.cloud.tools.jib.api.buildplan.FileEntriesLayer;
import com.google.cloud.tools.jib.api.buildplan.FilePermissions;
import com.google.cloud.tools.jib.api.buildplan.ImageFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * Writes the project's images as tarballs ({@code docker save} layout, what {@code ctr images import} and
 * {@code docker load} read) with Jib, from base images made by {@code images/bin/make-bases}: no daemon, no
 * registry. The same tarballs are what a user pushes to their registry ({@code docs/install.md}).
 *
 * <p>Usage: {@code BuildImages REPO_ROOT BASES_DIR OUT_DIR TAG KUBE_BIN_DIR}.
 */
public final class BuildImages {

    /** Where images are named before a user retags them for their registry. */
    public static final String REGISTRY = "dilu.local";

    private static final String JAVA_OPTS = "-XX:+UseSerialGC -XX:MaxRAMPercentage=75 --enable-native-access=ALL-UNNAMED";

    private final Path root;
    private final Path bases;
    private final Path out;
    private final String tag;
    private final Path kubeBin;

    private BuildImages(Path root, Path bases, Path out, String tag, Path kubeBin) {
        this.root = root;
        this.bases = bases;
        this.out = out;
        this.tag = tag;
        this.kubeBin = kubeBin;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: BuildImages REPO_ROOT BASES_DIR OUT_DIR TAG KUBE_BIN_DIR");
            System.exit(2);
        }
        BuildImages b = new BuildImages(Path.of(args[0]), Path.of(args[1]), Path.of(args[2]), args[3], Path.of(args[4]));
        Files.createDirectories(b.out);
        b.quarkus("node-agent", "device-plugin", Map.of(
                b.root.resolve("hook-native/target/cmake/hook/libdilu-hook.so"), "/opt/dilu/image/libdilu-hook.so",
                b.root.resolve("hook-native/target/cmake/emu/libcuda.so.1"), "/opt/dilu/emu/libcuda.so.1"));
        b.quarkus("scheduler-extender", "scheduler-extender", Map.of());
        b.quarkus("webhook", "webhook", Map.of());
        b.quarkus("autoscaler", "autoscaler", Map.of());
        b.kubeScheduler();
        b.workload();
        b.pause();
    }

    /** A Quarkus fast-jar on the Java base: libraries in a layer of their own, so a rebuild changes one small layer. */
    private void quarkus(String name, String module, Map<Path, String> extras) throws Exception {
        Path app = root.resolve(module).resolve("target/quarkus-app");
        AbsoluteUnixPath deployments = AbsoluteUnixPath.get("/deployments");
        JibContainerBuilder image = Jib.from(base("base-java"))
                .addFileEntriesLayer(layer("libraries", app.resolve("lib"), deployments.resolve("lib")))
                .addFileEntriesLayer(layer("quarkus", app.resolve("quarkus"), deployments.resolve("quarkus")))
                .addFileEntriesLayer(FileEntriesLayer.builder().setName("application")
                        .addEntryRecursive(app.resolve("app"), deployments.resolve("app"), BuildImages::permissions,
                                (s, d) -> Instant.EPOCH)
                        .addEntry(app.resolve("quarkus-run.jar"), deployments.resolve("quarkus-run.jar"),
                                FilePermissions.DEFAULT_FILE_PERMISSIONS, Instant.EPOCH)
                        .build())
                .setWorkingDirectory(deployments)
                .setEntrypoint(List.of("/bin/sh", "-c", "exec java $JAVA_OPTS -jar /deployments/quarkus-run.jar"))
                .addEnvironmentVariable("JAVA_OPTS", JAVA_OPTS);
        // Only the node agent needs root (the kubelet's sockets, the host's /var/lib/dilu); the others run as
        // nobody, as their Deployments' runAsNonRoot demands.
        if (!name.equals("node-agent")) {
            image.setUser("65534:65534");
        }
        if (!extras.isEmpty()) {
            FileEntriesLayer.Builder files = FileEntriesLayer.builder().setName("native");
            for (Map.Entry<Path, String> e : extras.entrySet()) {
                files.addEntry(e.getKey(), AbsoluteUnixPath.get(e.getValue()), permissions(e.getKey(), null),
                        Instant.EPOCH);
            }
            image.addFileEntriesLayer(files.build());
        }
        write(image, name);
    }

    /**
     * kube-scheduler as built by e2e/bin/kube-binaries, for the dilu-scheduler Deployment, tagged with its version: the
     * name of the directory the script keeps it in ({@code $DILU_CACHE/k8s/<version>}).
     */
    private void kubeScheduler() throws Exception {
        JibContainerBuilder image = Jib.from(base("base-c"))
                .addFileEntriesLayer(FileEntriesLayer.builder().setName("kube-scheduler")
                        .addEntry(kubeBin.resolve("kube-scheduler"), AbsoluteUnixPath.get("/usr/local/bin/kube-scheduler"),
                                FilePermissions.fromOctalString("755"), Instant.EPOCH)
                        .build())
                .setEntrypoint(List.of("/usr/local/bin/kube-scheduler"));
        write(image, "kube-scheduler", "v" + kubeBin.getFileName());
    }

    /**
     * The emulated GPU workloads: the emulated CUDA driver where a real one would be (the NVIDIA container
     * runtime mounts libcuda.so.1 into /usr/lib/x86_64-linux-gnu), the inference server and the training loop.
     */
    private void workload() throws Exception {
        Path build = root.resolve("hook-native/target/cmake");
        FileEntriesLayer.Builder files = FileEntriesLayer.builder().setName("workloads");
        files.addEntry(build.resolve("emu/libcuda.so.1"), AbsoluteUnixPath.get("/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                FilePermissions.fromOctalString("755"), Instant.EPOCH);
        for (String tool : List.of("emu-infer", "emu-serve", "emu-train")) {
            files.addEntry(build.resolve("bin/" + tool), AbsoluteUnixPath.get("/usr/local/bin/" + tool),
                    FilePermissions.fromOctalString("755"), Instant.EPOCH);
        }
        files.addEntry(build.resolve("tests/hook_probe"), AbsoluteUnixPath.get("/usr/local/bin/dilu-probe"),
                FilePermissions.fromOctalString("755"), Instant.EPOCH);
        write(Jib.from(base("base-c")).addFileEntriesLayer(files.build()), "workload");
    }

    /** The pod sandbox: one static process that waits (images/pause/pause.c, built by make-bases' caller). */
    private void pause() throws Exception {
        JibContainerBuilder image = Jib.fromScratch()
                .addFileEntriesLayer(FileEntriesLayer.builder().setName("pause")
                        .addEntry(out.resolve("pause"), AbsoluteUnixPath.get("/pause"), FilePermissions.fromOctalString("755"),
                                Instant.EPOCH)
                        .build())
                .setEntrypoint(List.of("/pause"));
        write(image, "pause", "1");
    }

    private TarImage base(String name) {
        return TarImage.at(bases.resolve(name + ".tar"));
    }

    private static FileEntriesLayer layer(String name, Path from, AbsoluteUnixPath to) throws IOException {
        return FileEntriesLayer.builder().setName(name)
                .addEntryRecursive(from, to, BuildImages::permissions, (s, d) -> Instant.EPOCH).build();
    }

    /** The file's own mode: Jib's default would make every file 644, executables included. */
    private static FilePermissions permissions(Path source, AbsoluteUnixPath destination) {
        try {
            return FilePermissions.fromPosixFilePermissions(Files.getPosixFilePermissions(source));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void write(JibContainerBuilder image, String name) throws Exception {
        write(image, name, tag);
    }

    private void write(JibContainerBuilder image, String name, String version) throws Exception {
        ImageReference ref = ImageReference.of(REGISTRY, name, version);
        Path tar = out.resolve(name + ".tar");
        image.setFormat(ImageFormat.Docker).setCreationTime(Instant.EPOCH)
                .containerize(Containerizer.to(TarImage.at(tar).named(ref)).setOfflineMode(true)
                        .setToolName("dilu-images"));
        System.err.printf("images: %s -> %s (%d MiB)%n", ref, tar, Files.size(tar) >> 20);
    }
}
