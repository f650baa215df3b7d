package io.dilu.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** A real process a test starts and stops (kube-scheduler, a Dilu component), its output kept in a log file. */
public final class ChildProcess implements AutoCloseable {

    private final Process process;
    private final Path log;

    private ChildProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    public static ChildProcess start(List<String> command, Map<String, String> env, Path log) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return new ChildProcess(pb.start(), log);
    }

    /** A Quarkus application of this repository ({@code <module>/target/quarkus-app}) on the JVM running the test. */
    public static ChildProcess quarkusApp(String module, Map<String, String> env, Path log) throws IOException {
        Path jar = RealApiServer.root().resolve(module).resolve("target/quarkus-app/quarkus-run.jar");
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("no " + jar + "; build the module first (./mvnw package)");
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        return start(List.of(java, "--enable-native-access=ALL-UNNAMED", "-jar", jar.toString()), env, log);
    }

    public boolean alive() {
        return process.isAlive();
    }

    /** The process's output so far, for assertion messages. */
    public String output() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no output: " + e.getMessage() + ")";
        }
    }

    /** Stops it the way Kubernetes stops a container: SIGTERM, then SIGKILL after the grace period. */
    public void stop(Duration grace) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop(Duration.ofSeconds(10));
    }
}
