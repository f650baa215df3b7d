package io.dilu.deviceplugin.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The toolkit settings as config.toml spells them, with the toolkit's own defaults where it says nothing. */
class ToolkitConfigTest {

    @Test
    void theToolkitsDefaultsLeaveTheVariableRouteOpen() {
        ToolkitConfig none = ToolkitConfig.parse("disable-require = false\n\n[nvidia-container-cli]\nldconfig = \"@/sbin/ldconfig\"\n");
        assertThat(none.envvarRouteOpen()).isTrue();
        assertThat(none.acceptVolumeMounts()).isFalse();
    }

    @Test
    void theSettingsInstallMdAsksFor() {
        ToolkitConfig closed = ToolkitConfig.parse("""
                accept-nvidia-visible-devices-as-volume-mounts = true
                accept-nvidia-visible-devices-envvar-when-unprivileged = false   # docs/install.md
                disable-require = false

                [nvidia-container-runtime]
                mode = "auto"
                """);
        assertThat(closed.envvarRouteOpen()).isFalse();
        assertThat(closed.acceptVolumeMounts()).isTrue();
    }

    @Test
    void commentedOrMisplacedSettingsDoNotCount() {
        assertThat(ToolkitConfig.parse("#accept-nvidia-visible-devices-envvar-when-unprivileged = false\n").envvarRouteOpen())
                .isTrue();
        assertThat(ToolkitConfig.parse("[nvidia-container-cli]\naccept-nvidia-visible-devices-envvar-when-unprivileged = false\n")
                .envvarRouteOpen()).as("below a table the key is another table's").isTrue();
        assertThat(ToolkitConfig.parse("accept-nvidia-visible-devices-envvar-when-unprivileged = nonsense\n").envvarRouteOpen())
                .as("anything but false is open").isTrue();
    }

    @TempDir
    Path tmp;

    /** Open unless shown closed: the toolkit's defaults hold wherever the file says nothing or cannot be read. */
    @Test
    void theRouteIsOpenUnlessTheNodeShowsItClosed() throws Exception {
        Path missing = tmp.resolve("nvidia-container-runtime/config.toml");
        ToolkitConfig.Verdict emulated = ToolkitConfig.judge(missing, false);
        assertThat(emulated.open()).as("no NVIDIA GPU, no toolkit: nothing reads the variable").isFalse();
        assertThat(emulated.why()).contains("no NVIDIA GPU");
        ToolkitConfig.Verdict nvidia = ToolkitConfig.judge(missing, true);
        assertThat(nvidia.open()).as("NVIDIA GPUs and no file: the toolkit's defaults").isTrue();
        assertThat(nvidia.why()).contains("runs on its defaults");

        Path file = Files.writeString(tmp.resolve("config.toml"), "disable-require = false\n");
        for (boolean gpus : new boolean[] {false, true}) {
            assertThat(ToolkitConfig.judge(file, gpus).open()).as("a file that says nothing, GPUs %s", gpus).isTrue();
        }
        Files.writeString(file, "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n");
        assertThat(ToolkitConfig.judge(file, true)).extracting(ToolkitConfig.Verdict::open, ToolkitConfig.Verdict::why)
                .containsExactly(false, "accept-nvidia-visible-devices-envvar-when-unprivileged = false in " + file);
        assertThat(ToolkitConfig.judge(file, true).settings()).hasValue(new ToolkitConfig(false, false));

        Path unreadable = Files.createDirectories(tmp.resolve("a-directory.toml"));
        ToolkitConfig.Verdict dir = ToolkitConfig.judge(unreadable, false);
        assertThat(dir.open()).as("nothing shows it closed").isTrue();
        assertThat(dir.why()).contains("cannot be read");
    }
}
