package io.dilu.webhook.admission;

/**
 * How a GPU pod gets the hook.
 *
 * @param hostDir host directory the node agent installs the hook in
 * @param containerDir where containers see it
 * @param file the library's file name
 * @param schedulerName the scheduler GPU pods are given
 */
public record HookSettings(String hostDir, String containerDir, String file, String schedulerName) {

    public static final String VOLUME = "dilu-hook";

    public String libraryPath() {
        return containerDir + "/" + file;
    }
}
