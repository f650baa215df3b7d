package io.dilu.deviceplugin.backstop;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Fields of {@code /proc/<pid>/stat} as the backstop reads them, whatever the command name holds. */
class ProcFsTest {

    private static String stat(String comm, char state) {
        // pid (comm) state ppid ... field 22 (starttime) is 4242
        return "77 (" + comm + ") " + state + " 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 1000 10";
    }

    @Test
    void aProcessEndedButNotReapedIsEnded() {
        assertThat(ProcFs.endedOf(stat("sleep", 'S'))).isFalse();
        assertThat(ProcFs.endedOf(stat("sleep", 'R'))).isFalse();
        assertThat(ProcFs.endedOf(stat("sleep", 'Z'))).isTrue();
        assertThat(ProcFs.endedOf(stat("sleep", 'X'))).isTrue();
        // A name that plays at being a state: the state follows the last ')'.
        assertThat(ProcFs.endedOf(stat("x) Z (y", 'S'))).isFalse();
        assertThat(ProcFs.endedOf("garbage")).isTrue();
    }

    @Test
    void theStartTimeFollowsTheLastParenthesis() {
        assertThat(ProcFs.startTicksOf(stat("a) 1 2 (b", 'S'))).hasValue(4242);
        assertThat(ProcFs.startTicksOf("77 (short) S 1")).isEmpty();
    }
}
