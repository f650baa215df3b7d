package io.dilu.deviceplugin.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

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

    @Test
    void anUnreadableFileIsNotKnown() {
        assertThat(ToolkitConfig.read(Path.of("/nonexistent/config.toml"))).isEmpty();
    }
}
