package io.dilu.deviceplugin.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How the co-location's MPS ways run ({@code ./dilu gpu-check --colocation}). CUDA_MPS_ACTIVE_THREAD_PERCENTAGE limits
 * a client's SMs only under NVIDIA's MPS; without its daemon a GPU ignores it, and an "MPS" way would silently be no
 * control at all. So: on the emulated GPU the variable is the emulator's model of it and nothing else runs; on a GPU
 * whose MPS daemon already serves the machine, that daemon (every way then runs under MPS, and the output says so);
 * else the check starts a daemon of its own for a scenario's MPS ways, with pipe and log directories of its own
 * ({@code nvidia-cuda-mps-control -d}), and quits it after them, so that the other ways run without MPS as the
 * machine had them; with no control program on PATH, or one that does not start, the ways are skipped and the reason
 * printed.
 */
final class Mps {

    static final String CONTROL = "nvidia-cuda-mps-control";
    /** Where MPS clients and the control program meet when CUDA_MPS_PIPE_DIRECTORY is unset (NVIDIA's default). */
    static final Path DEFAULT_PIPE = Path.of("/tmp/nvidia-mps");
    static final String PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY";
    static final String LOG_ENV = "CUDA_MPS_LOG_DIRECTORY";
    static final String PERCENT_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
    private static final long COMMAND_SECONDS = 30;

    enum Kind {
        EMULATED("emulated"), EXISTING("existing"), STARTED("started"), UNAVAILABLE("skipped");

        /** The BENCH value of {@code mps=}. */
        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    /** Why an MPS way could not run under MPS. */
    static final class Unavailable extends Exception {
        Unavailable(String why) {
            super(why);
        }
    }

    private final Kind kind;
    private final String description;
    private final Path control; // STARTED only
    private final Path work;
    private final AtomicInteger sessions = new AtomicInteger();

    private Mps(Kind kind, String description, Path control, Path work) {
        this.kind = kind;
        this.description = description;
        this.control = control;
        this.work = work;
    }

    private static Mps skipped(String why) {
        return new Mps(Kind.UNAVAILABLE, why, null, null);
    }

    static Mps emulated() {
        return new Mps(Kind.EMULATED, "emulated: the emulator's model of " + PERCENT_ENV + ", no daemon", null, null);
    }

    /**
     * On a GPU: a daemon the environment's pipe directory (or NVIDIA's default) already has, else the control program
     * from the environment's PATH.
     */
    static Mps onGpu(Map<String, String> env, Path defaultPipe, Path work) {
        Path pipe = Optional.ofNullable(env.get(PIPE_ENV)).map(Path::of).orElse(defaultPipe);
        if (Files.exists(pipe.resolve("control"))) {
            return new Mps(Kind.EXISTING, "existing: a daemon already serves " + pipe
                    + "; every way, Dilu's and no control's too, ran under it", null, null);
        }
        for (String dir : env.getOrDefault("PATH", "").split(":")) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir).resolve(CONTROL);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return new Mps(Kind.STARTED, "started: " + candidate + " -d for each scenario's MPS ways, quit after them",
                        candidate, work);
            }
        }
        return skipped(CONTROL + " is not on PATH, and no daemon serves " + pipe);
    }

    Kind kind() {
        return kind;
    }

    String describe() {
        return kind == Kind.UNAVAILABLE ? "skipped: " + description : description;
    }

    /** Why the MPS ways cannot run at all, or empty when they can be tried. */
    Optional<String> unavailable() {
        return kind == Kind.UNAVAILABLE ? Optional.of(description) : Optional.empty();
    }

    /**
     * A daemon for MPS ways, running until the session closes, and the environment their clients need besides their
     * percentage.
     */
    Session open() throws Unavailable, IOException, InterruptedException {
        if (kind == Kind.UNAVAILABLE) {
            throw new Unavailable(unavailable().orElseThrow());
        }
        if (kind != Kind.STARTED) {
            return new Session(Map.of(), null);
        }
        Path dir = work.resolve("mps-" + sessions.incrementAndGet());
        Map<String, String> env = Map.of(PIPE_ENV, Files.createDirectories(dir.resolve("pipe")).toString(), LOG_ENV,
                Files.createDirectories(dir.resolve("log")).toString());
        Result started = command(env, dir, "start", null, "-d");
        if (started.rc() != 0) {
            throw new Unavailable(CONTROL + " -d exited " + started.rc() + ": " + started.said());
        }
        return new Session(Map.of(PIPE_ENV, env.get(PIPE_ENV)), env);
    }

    private record Result(int rc, String said) {}

    private Result command(Map<String, String> env, Path dir, String name, String input, String... args)
            throws IOException, InterruptedException {
        Path said = dir.resolve(name + ".txt");
        ProcessBuilder pb = new ProcessBuilder(concat(control.toString(), args)).redirectErrorStream(true)
                .redirectOutput(said.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        try (OutputStream in = p.getOutputStream()) {
            if (input != null) {
                in.write(input.getBytes(StandardCharsets.UTF_8));
            }
        }
        if (!p.waitFor(COMMAND_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new Result(-1, "did not return in " + COMMAND_SECONDS + " s");
        }
        return new Result(p.exitValue(), Files.readString(said, StandardCharsets.UTF_8).strip());
    }

    private static String[] concat(String first, String... rest) {
        String[] all = new String[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    /** A daemon for MPS ways; closing it quits the daemon this check started (a daemon it found stays). */
    final class Session implements AutoCloseable {
        private final Map<String, String> clientEnv;
        private final Map<String, String> daemonEnv; // null: not started here

        private Session(Map<String, String> clientEnv, Map<String, String> daemonEnv) {
            this.clientEnv = clientEnv;
            this.daemonEnv = daemonEnv;
        }

        /** What each client's environment needs, besides its percentage, to reach the daemon. */
        Map<String, String> clientEnv() {
            return clientEnv;
        }

        /** Where the daemon logs, when this check started it. */
        Optional<Path> logDirectory() {
            return Optional.ofNullable(daemonEnv).map(e -> Path.of(e.get(LOG_ENV)));
        }

        /**
         * Whether an MPS server ran for the clients: the daemon starts one at its first client, which logs to
         * server.log beside the daemon's control.log (NVIDIA's MPS documentation). True where this check did not
         * start the daemon, whose logs it does not know.
         */
        boolean serverLogged() {
            return logDirectory().map(dir -> Files.exists(dir.resolve("server.log"))).orElse(true);
        }

        @Override
        public void close() throws IOException, InterruptedException {
            if (daemonEnv == null) {
                return;
            }
            Path dir = Path.of(daemonEnv.get(LOG_ENV)).getParent();
            Result quit = command(daemonEnv, dir, "quit", "quit\n");
            if (quit.rc() != 0) {
                // A daemon left running would put the ways after it under MPS: the check cannot go on.
                throw new IllegalStateException(CONTROL + " quit exited " + quit.rc() + ": " + quit.said()
                        + "; stop it by hand: echo quit | " + PIPE_ENV + "=" + daemonEnv.get(PIPE_ENV) + " " + control);
            }
        }
    }
}
