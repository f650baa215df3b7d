package io.dilu.deviceplugin.gpu;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

/**
 * The two settings of the NVIDIA container toolkit ({@code /etc/nvidia-container-runtime/config.toml}) that decide
 * whether a tenant can take GPUs by naming them itself (docs/install.md, "GPU nodes"): with
 * {@code accept-nvidia-visible-devices-envvar-when-unprivileged} true — the toolkit's default — any unprivileged
 * container gets the GPUs its {@code NVIDIA_VISIBLE_DEVICES} names, from its image's ENV as well as its pod spec.
 * The agent reads them at start and says what it found (a warning, and {@code dilu_toolkit_envvar_route_open}).
 *
 * @param acceptEnvvarUnprivileged the file's value, or the toolkit's default (true) when it has none
 * @param acceptVolumeMounts the file's value, or the toolkit's default (false)
 */
public record ToolkitConfig(boolean acceptEnvvarUnprivileged, boolean acceptVolumeMounts) {

    static final String ENVVAR = "accept-nvidia-visible-devices-envvar-when-unprivileged";
    static final String VOLUME_MOUNTS = "accept-nvidia-visible-devices-as-volume-mounts";

    /** The node's settings, or empty when the file cannot be read (no toolkit, or not mounted). */
    public static Optional<ToolkitConfig> read(Path file) {
        try {
            return Optional.of(parse(Files.readString(file, StandardCharsets.UTF_8)));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The two top-level keys of a config.toml (before its first table), with the toolkit's defaults. */
    static ToolkitConfig parse(String toml) {
        boolean envvar = true;
        boolean mounts = false;
        for (String raw : toml.split("\n")) {
            String line = raw.strip();
            if (line.startsWith("[")) {
                break; // the keys that matter are top-level: nothing below a table header is theirs
            }
            int hash = line.indexOf('#');
            line = (hash >= 0 ? line.substring(0, hash) : line).strip();
            int eq = line.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String key = line.substring(0, eq).strip().replace("\"", "");
            String value = line.substring(eq + 1).strip().toLowerCase(Locale.ROOT);
            if (key.equals(ENVVAR)) {
                envvar = !value.equals("false");
            } else if (key.equals(VOLUME_MOUNTS)) {
                mounts = value.equals("true");
            }
        }
        return new ToolkitConfig(envvar, mounts);
    }

    /** Whether an unprivileged container can name its own GPUs through NVIDIA_VISIBLE_DEVICES. */
    public boolean envvarRouteOpen() {
        return acceptEnvvarUnprivileged;
    }
}
