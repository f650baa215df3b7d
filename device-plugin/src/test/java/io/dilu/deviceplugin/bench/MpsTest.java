package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The MPS daemon's lifecycle against a stand-in control program that records how it was called. */
class MpsTest {

    @TempDir
    Path tmp;

    /** A control program that appends "ARGS pipe=… log=… stdin=…" to calls.txt and exits `rc`, saying `says`. */
    private Path fakeControl(int rc, String says) throws Exception {
        Path bin = Files.createDirectories(tmp.resolve("bin"));
        Path script = bin.resolve(Mps.CONTROL);
        Files.writeString(script, """
                #!/bin/sh
                input=""
                [ "$1" = -d ] || input=$(cat)
                echo "$* pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY stdin=$input" >> "%s"
                echo "%s"
                exit %d
                """.formatted(tmp.resolve("calls.txt"), says, rc));
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return bin;
    }

    private List<String> calls() throws Exception {
        Path calls = tmp.resolve("calls.txt");
        return Files.exists(calls) ? Files.readAllLines(calls, StandardCharsets.UTF_8) : List.of();
    }

    @Test
    void aDaemonOfItsOwnRunsForEachWayOnlyWithItsOwnDirectories() throws Exception {
        Path bin = fakeControl(0, "");
        Mps mps = Mps.onGpu(Map.of("PATH", "/nonexistent:" + bin), tmp.resolve("no-default-pipe"), tmp.resolve("work"));
        assertThat(mps.kind()).isEqualTo(Mps.Kind.STARTED);
        Path pipe;
        try (Mps.Session session = mps.open()) {
            pipe = Path.of(session.clientEnv().get(Mps.PIPE_ENV));
            assertThat(pipe).startsWith(tmp.resolve("work")).isDirectory();
            assertThat(calls()).as("started, not yet quit").hasSize(1);
            assertThat(calls().getFirst()).startsWith("-d pipe=" + pipe + " log=" + session.logDirectory().orElseThrow());
        }
        assertThat(calls()).hasSize(2);
        assertThat(calls().get(1)).as("quit through the same pipe").startsWith(" pipe=" + pipe).endsWith("stdin=quit");
        Mps.Session logged = mps.open();
        assertThat(logged.serverLogged()).as("no client reached a server").isFalse();
        Files.writeString(logged.logDirectory().orElseThrow().resolve("server.log"), "a server ran\n");
        assertThat(logged.serverLogged()).isTrue();
        logged.close();
        try (Mps.Session second = mps.open()) {
            assertThat(second.clientEnv().get(Mps.PIPE_ENV)).as("a fresh daemon, fresh directories")
                    .isNotEqualTo(pipe.toString());
        }
    }

    @Test
    void aDaemonThatDoesNotStartSkipsTheWayWithWhatItSaid() throws Exception {
        Path bin = fakeControl(3, "An instance of this daemon is already running");
        Mps mps = Mps.onGpu(Map.of("PATH", bin.toString()), tmp.resolve("no-default-pipe"), tmp.resolve("work"));
        assertThatThrownBy(mps::open).isInstanceOf(Mps.Unavailable.class)
                .hasMessage(Mps.CONTROL + " -d exited 3: An instance of this daemon is already running");
    }

    @Test
    void aQuitThatFailsStopsTheCheckSayingHowToStopTheDaemon() throws Exception {
        Path bin = fakeControl(0, "");
        Mps mps = Mps.onGpu(Map.of("PATH", bin.toString()), tmp.resolve("no-default-pipe"), tmp.resolve("work"));
        Mps.Session session = mps.open();
        Files.writeString(bin.resolve(Mps.CONTROL), "#!/bin/sh\ncat >/dev/null\necho refused\nexit 1\n");
        assertThatThrownBy(session::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("quit exited 1: refused").hasMessageContaining("stop it by hand");
    }

    @Test
    void withoutTheControlProgramTheWaysAreSkippedAndSaySo() throws Exception {
        Mps mps = Mps.onGpu(Map.of("PATH", tmp.toString()), tmp.resolve("no-default-pipe"), tmp.resolve("work"));
        assertThat(mps.kind().label).isEqualTo("skipped");
        assertThat(mps.unavailable()).hasValueSatisfying(why -> assertThat(why).contains(Mps.CONTROL + " is not on PATH"));
        assertThatThrownBy(mps::open).isInstanceOf(Mps.Unavailable.class).hasMessageContaining(Mps.CONTROL);
    }

    @Test
    void aDaemonAlreadyServingTheMachineIsUsedAndNothingIsStarted() throws Exception {
        Path bin = fakeControl(0, "");
        Path pipe = Files.createDirectories(tmp.resolve("pipe"));
        Files.createFile(pipe.resolve("control"));
        Mps mps = Mps.onGpu(Map.of("PATH", bin.toString(), Mps.PIPE_ENV, pipe.toString()), tmp.resolve("unused"),
                tmp.resolve("work"));
        assertThat(mps.kind()).isEqualTo(Mps.Kind.EXISTING);
        assertThat(mps.describe()).contains("every way");
        try (Mps.Session session = mps.open()) {
            assertThat(session.clientEnv()).isEmpty();
            assertThat(session.serverLogged()).as("not this check's daemon: nothing to judge").isTrue();
        }
        assertThat(calls()).isEmpty();
    }
}
