package io.dilu.deviceplugin.gpu;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

/**
 * The two settings of the NVIDIA container toolkit ({@code /etc/nvidia-container-runtime/config.toml}) that decide
 * whether a tenant can take GPUs by naming them itself (docs/install.md, "GPU nodes"): with
 * {@code accept-nvidia-visible-devices-envvar-when-unprivileged} true — the toolkit's default — any unprivileged
 * container gets the GPUs its {@code NVIDIA_VISIBLE_DEVICES} names, from its image's ENV as well as its pod spec.
 * {@link #judge} says whether that route is open on a node; the agent's {@code ToolkitGate} acts on it.
 *
 * @param acceptEnvvarUnprivileged the file's value, or the toolkit's default (true) when it has none
 * @param acceptVolumeMounts the file's value, or the toolkit's default (false)
 */
public record ToolkitConfig(boolean acceptEnvvarUnprivileged, boolean acceptVolumeMounts) {

    static final String ENVVAR = "accept-nvidia-visible-devices-envvar-when-unprivileged";
    static final String VOLUME_MOUNTS = "accept-nvidia-visible-devices-as-volume-mounts";

    /**
     * Whether an unprivileged container of this node can name its own GPUs through NVIDIA_VISIBLE_DEVICES, and why.
     *
     * @param settings what the toolkit's file says, where it could be read
     */
    public record Verdict(boolean open, String why, Optional<ToolkitConfig> settings) {}

    /**
     * The route as the node's toolkit leaves it. Open unless shown closed: the file says {@code false}, or there is
     * no file and no NVIDIA GPU ({@code nvidiaGpus} false: emulated GPUs), where nothing on the node reads the
     * variable — the toolkit hands out NVIDIA GPUs only, and without a GPU of NVIDIA's there is no route to close.
     * With NVIDIA GPUs a missing file is open, since the toolkit then runs on its defaults (the agent cannot tell a
     * toolkit without a file from no toolkit at all, nor does Allocate's device list reach a GPU without one), and a
     * file that cannot be read is open too: nothing shows it closed.
     */
    public static Verdict judge(Path file, boolean nvidiaGpus) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return nvidiaGpus
                    ? new Verdict(true, "there is no " + file + ": the NVIDIA container toolkit runs on its defaults, which "
                            + "give unprivileged containers the GPUs their NVIDIA_VISIBLE_DEVICES names", Optional.empty())
                    : new Verdict(false, "there is no " + file + " and no NVIDIA GPU (emulated GPUs): nothing on this node "
                            + "hands out GPUs by NVIDIA_VISIBLE_DEVICES", Optional.empty());
        } catch (IOException | RuntimeException e) {
            return new Verdict(true, file + " cannot be read (" + e.getMessage() + "): taken as the toolkit's default, which "
                    + "gives unprivileged containers the GPUs their NVIDIA_VISIBLE_DEVICES names", Optional.empty());
        }
        ToolkitConfig settings = parse(text);
        return settings.envvarRouteOpen()
                ? new Verdict(true, ENVVAR + " is not false in " + file + " (absent, it is the toolkit's default: true): any "
                        + "unprivileged container gets the GPUs its NVIDIA_VISIBLE_DEVICES names, an image's ENV included",
                        Optional.of(settings))
                : new Verdict(false, ENVVAR + " = false in " + file, Optional.of(settings));
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
