package io.dilu.autoscaler;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.ScalingParameters;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;

/** The autoscaler's configuration ({@code dilu.autoscaler.*}). */
@ConfigMapping(prefix = "dilu.autoscaler")
public interface AutoscalerConfig {

    /** Whether PodAutoscalers are reconciled (off in unit tests). */
    @WithDefault("true")
    boolean enabled();

    /** The PodAutoscaler class this autoscaler claims. */
    @WithDefault(DiluNames.AUTOSCALER_CLASS)
    String paClass();

    /** How often queue-proxies are scraped and decisions made: one sample of the window per tick. */
    @WithDefault("1s")
    Duration tick();

    /** Samples in the window, one per tick; unset: {@link ScalingParameters#DEFAULTS}' (the paper's 40 s). */
    OptionalInt windowSamples();

    /** Samples above capacity that trigger a scale-out (φ_out); unset: {@link ScalingParameters#DEFAULTS}'. */
    OptionalInt phiOut();

    /** Samples below one-fewer capacity that trigger a scale-in (φ_in); unset: {@link ScalingParameters#DEFAULTS}'. */
    OptionalInt phiIn();

    /**
     * Lazy scaling as configured: the overrides above over core's defaults, the burst guard's window its share of
     * the window configured.
     */
    default ScalingParameters lazyScaling() {
        ScalingParameters d = ScalingParameters.DEFAULTS;
        int window = windowSamples().orElse(d.windowSeconds());
        return new ScalingParameters(window, phiOut().orElse(d.phiOut()), phiIn().orElse(d.phiIn()), d.minScale(),
                d.maxScale(), ScalingParameters.burstWindowFor(window));
    }

    /** queue-proxy's metrics port. */
    @WithDefault("9090")
    int queueProxyPort();

    /**
     * One deadline per scrape for connect, headers and the whole body: a pod that has not answered completely
     * within it gives no sample this tick. Keep it below the tick: the tick waits up to this long for its pods.
     */
    @WithDefault("800ms")
    Duration scrapeTimeout();

    /**
     * The most of a queue-proxy's answer that is read (1024..16777216 bytes). A Stat is tens of bytes; 64 KiB
     * leaves room for any honest one while a pod that sends more costs this much memory and no more.
     */
    @WithDefault("65536")
    int scrapeMaxBytes();

    /**
     * The highest request rate believed of one pod; a Stat above it is refused as implausible, as are NaN,
     * infinities, negative counts and proxied counts above received ones. One pod is one function instance
     * behind one queue-proxy: queue-proxy proxies some tens of thousands of requests per second at most and a
     * GPU instance serves far fewer, so 100,000 refuses nothing real, while a bogus 1e308 never reaches the
     * window (where it would scale the function to its max-scale).
     */
    @WithDefault("100000")
    double maxPodRps();

    /**
     * Whether an instance of Dilu's class that the lazy rule releases while the revision's history expects it back
     * is parked — kept with its model in GPU memory, its SM booking given back, out of the request path — instead of
     * removed, so that the next scale-out wakes it in about a second instead of a cold start (core's {@code
     * RevisionScaler}; docs/autoscaler.md, "Parking"). Off: the paper's rule, instances go.
     */
    @WithDefault("true")
    boolean parking();

    /** Requests per second one instance serves, when neither the profile nor {@code dilu.io/serving-rps} says. */
    @WithDefault("10")
    double defaultServingRps();

    /**
     * How this autoscaler is installed beside Knative: {@code alongside} Knative's own autoscaler (it scales
     * PodAutoscalers of {@link #paClass()} only, and a revision at zero cannot wake, since the activator reports to
     * Knative's autoscaler), or {@code replace}, as the {@code autoscaler} Service of {@code knative-serving}: it then
     * receives the activator's reports, also scales Knative's own class ({@code kpa.autoscaling.knative.dev}) as
     * Knative's KPA does, and revisions may scale to zero.
     */
    @WithDefault("alongside")
    Mode mode();

    /** See {@link #mode()}. */
    enum Mode {
        ALONGSIDE, REPLACE
    }

    /**
     * Whether revisions with min-scale 0 may go to zero, over {@code config-autoscaler}'s {@code
     * enable-scale-to-zero}. Unset (the default): off {@code alongside}, where a revision at zero would not wake;
     * {@code replace}: as the ConfigMap says (Knative's default: on).
     */
    Optional<Boolean> enableScaleToZero();

    /** Whether revisions may go to zero, given the cluster's {@code config-autoscaler} (see {@link #enableScaleToZero()}). */
    default boolean scaleToZero(KnativeAutoscalerConfig cluster) {
        return enableScaleToZero().orElse(mode() == Mode.REPLACE ? cluster.enableScaleToZero()
                : Boolean.parseBoolean(Autoscale.DEFAULT_SCALE_TO_ZERO));
    }

    /** The namespace of Knative Serving, whose {@code config-autoscaler} ConfigMap holds the cluster's defaults. */
    @WithDefault(KnativeNames.SERVING_NAMESPACE)
    String knativeNamespace();

    /**
     * Liveness ({@code /q/health/live}) goes DOWN when the leading replica has completed no tick for this many
     * tick intervals (at least 2): its tick is stuck (or died), and a restart hands the Lease to the standby.
     * A replica that does not lead does not tick and stays UP.
     */
    @WithDefault("10")
    int livenessMissedTicks();

    /**
     * How often, at most, a revision's learned history (its keep-alive histograms, docs/autoscaler.md, "The revision's
     * history") is written to its ConfigMap in {@link #leaseNamespace()}, and then only when it changed: a new leader
     * continues from it. A leader that dies loses what it learned since its last write, at most this long of traffic;
     * shorter costs one ConfigMap write per changing revision per period.
     */
    @WithDefault("10s")
    Duration historySavePeriod();

    /** The Lease that makes one replica the active one. */
    @WithDefault("dilu-autoscaler")
    String leaseName();

    /** Namespace of that Lease, and of the revisions' stored histories (tenants cannot write there). */
    @WithDefault("dilu-system")
    String leaseNamespace();

    /** The profiler, which finds GpuFunctionProfiles' settings by trials that run as pods. */
    Profiler profiler();

    /** {@code dilu.autoscaler.profiler.*} */
    interface Profiler {

        /** Whether profiles with an image and no settings are profiled (by the leading replica). */
        @WithDefault("true")
        boolean enabled();

        /**
         * How long one attempt of a trial may take, from its pod's creation to its report: scheduling, the image pull,
         * loading the model and the run (also the pod's activeDeadlineSeconds). A trial's own run is a warm-up and ten
         * timed batches, well under a second on the emulated models, whose 35 trials as pods took about two minutes
         * together on the local cluster (docs/profiler.md); the rest is the first pull of a large image on a node and loading the weights (a
         * 7 B model's 13 GB at about 1 GB/s: some seconds). A trial that has not reported by then is ended and retried
         * (the layers already pulled stay on the node); while it runs, it holds one of its namespace's slots.
         */
        @WithDefault("2m")
        Duration trialTimeout();

        /** Further attempts of a trial whose pod failed or did not report in time. */
        @WithDefault("2")
        int retries();

        /** Trials run at once, in all (each takes a whole GPU's memory). */
        @WithDefault("2")
        int parallel();

        /** Trials of one namespace run at once (at most {@link #parallel()}): the rest of the slots are others'. */
        @WithDefault("1")
        int maxTrialsPerNamespace();

        /**
         * Profiles of one namespace queued or profiling at once (at least {@link #maxTrialsPerNamespace()}); the others
         * wait with {@code Profiling=False}, reason {@code QuotaExceeded}, until one of these is done.
         */
        @WithDefault("10")
        int maxQueuedPerNamespace();

        /** How often profiles are looked over for work. */
        @WithDefault("2s")
        Duration scanInterval();
    }
}
