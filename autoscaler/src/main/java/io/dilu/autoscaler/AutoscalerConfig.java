package io.dilu.autoscaler;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** The autoscaler's configuration ({@code dilu.autoscaler.*}). */
@ConfigMapping(prefix = "dilu.autoscaler")
public interface AutoscalerConfig {

    /** Whether PodAutoscalers are reconciled (off in unit tests). */
    @WithDefault("true")
    boolean enabled();

    /** The PodAutoscaler class this autoscaler claims. */
    @WithDefault("co-scaling.dilu.io")
    String paClass();

    /** How often queue-proxies are scraped and decisions made: one sample of the window per tick. */
    @WithDefault("1s")
    Duration tick();

    /** Samples in the window (the paper's 40 s at one per second). */
    @WithDefault("40")
    int windowSamples();

    /** Samples above capacity that trigger a scale-out (φ_out). */
    @WithDefault("20")
    int phiOut();

    /** Samples below one-fewer capacity that trigger a scale-in (φ_in). */
    @WithDefault("30")
    int phiIn();

    /** queue-proxy's metrics port. */
    @WithDefault("9090")
    int queueProxyPort();

    /** A pod that has not answered within this is skipped for this tick. */
    @WithDefault("800ms")
    Duration scrapeTimeout();

    /** Requests per second one instance serves, when neither the profile nor {@code dilu.io/serving-rps} says. */
    @WithDefault("10")
    double defaultServingRps();

    /**
     * Whether revisions with min-scale 0 may go to zero (Knative's enable-scale-to-zero). Off by default: a
     * revision at zero is woken by the request rate the activator reports, which this autoscaler does not
     * receive yet, so it would stay at zero.
     */
    @WithDefault("false")
    boolean enableScaleToZero();

    /** How long the scaler must keep wanting zero before the last instance goes. */
    @WithDefault("30s")
    Duration scaleToZeroGrace();

    /** The Lease that makes one replica the active one. */
    @WithDefault("dilu-autoscaler")
    String leaseName();

    /** Namespace of that Lease. */
    @WithDefault("dilu-system")
    String leaseNamespace();
}
