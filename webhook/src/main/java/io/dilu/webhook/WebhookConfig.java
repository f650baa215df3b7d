package io.dilu.webhook;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/** The admission webhook's configuration ({@code dilu.webhook.*}). */
@ConfigMapping(prefix = "dilu.webhook")
public interface WebhookConfig {

    /** Host directory where the node agent installs the hook library (a hostPath volume of each GPU pod). */
    @WithDefault("/opt/dilu/lib")
    String hookHostDir();

    /** Where GPU containers see that directory. */
    @WithDefault("/opt/dilu/lib")
    String hookContainerDir();

    /** The hook library's file name in it. */
    @WithDefault("libdilu-hook.so")
    String hookFile();

    /** The scheduler GPU pods are given (the dilu-scheduler profile). */
    @WithDefault("dilu-scheduler")
    String schedulerName();

    /** Namespace label that lets privileged containers have a GPU share (they could bypass the hook). */
    @WithDefault("dilu.io/allow-privileged")
    String allowPrivilegedLabel();

    /** Whether Nodes and Namespaces are watched (off only in unit tests). */
    @WithDefault("true")
    boolean watch();
}
