package io.dilu.kube.profile;

import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.dilu.core.profiling.TrialReport;
import io.dilu.core.quota.FieldError;
import io.dilu.kube.TypedResource;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.Version;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A function's GPU settings (manifests/crds/gpufunctionprofiles.dilu.io.yaml): written by hand in the
 * {@code spec}, or found by the profiler from the image in the spec and written to the {@code status}. The one
 * typed model of the resource; the webhook, the autoscaler and the profiler all read it through
 * {@link #settings()}.
 */
@Group(GpuFunctionProfile.GROUP)
@Version(GpuFunctionProfile.VERSION)
@Kind("GpuFunctionProfile")
@Plural("gpufunctionprofiles")
// HasMetadata's own deserializer looks types up by kind; this class is its own type.
@JsonDeserialize(using = JsonDeserializer.None.class)
public final class GpuFunctionProfile extends TypedResource<ProfileSpec, ProfileStatus> {

    public static final String GROUP = "dilu.io";
    public static final String VERSION = "v1alpha1";
    /** Condition type: trials are running. */
    public static final String PROFILING = "Profiling";
    /** Condition type: the status holds the profiled settings. */
    public static final String READY = "Ready";
    /** Condition type: profiling gave up; the reason says why. */
    public static final String FAILED = "Failed";

    public GpuFunctionProfile() {
        super(GROUP + "/" + VERSION, "GpuFunctionProfile");
    }

    public GpuFunctionProfile(ObjectMeta metadata, ProfileSpec spec, ProfileStatus status) {
        this();
        setMetadata(metadata);
        setSpec(spec);
        setStatus(status);
    }

    /**
     * The settings pods of this function get: the spec's when written by hand ({@code smRequest} set), else the
     * status's once profiling made it {@code Ready}; empty while profiling runs, after it failed, or when the
     * status's settings are from an older spec. A value {@link #settings(List)} refuses reads as unknown.
     */
    public Optional<ProfileSettings> settings() {
        return settings(new ArrayList<>());
    }

    /**
     * As {@link #settings()}, adding to {@code problems} each value it refuses, naming the field and the allowed
     * range. The API server's schema bounds each field alone; what it cannot say (the rate at the limit at least the
     * rate at the request: a larger share does not serve less) is checked here, and a refused value reads as unknown.
     */
    public Optional<ProfileSettings> settings(List<FieldError> problems) {
        ProfileSpec spec = getSpec();
        ProfileStatus status = getStatus();
        if (spec == null || spec.function() == null) {
            return Optional.empty();
        }
        if (spec.handWritten()) {
            return Optional.of(new ProfileSettings(spec.function(), spec.smRequest(), Optional.ofNullable(spec.smLimit()),
                    spec.memoryMiB() == null ? 0 : spec.memoryMiB(), Optional.ofNullable(spec.batchSize()),
                    Optional.ofNullable(spec.priority()), spec.llm(), Optional.ofNullable(spec.klcThreshold()),
                    Optional.ofNullable(spec.servingThroughputRps()),
                    rateAtLimit("spec", spec.servingThroughputRps(), spec.servingThroughputRpsAtLimit(), problems)));
        }
        if (status == null || status.smRequest() == null || !conditionTrue(READY) || !current()) {
            return Optional.empty();
        }
        return Optional.of(new ProfileSettings(spec.function(), status.smRequest(), Optional.ofNullable(status.smLimit()),
                status.memoryMiB() == null ? 0 : status.memoryMiB(), Optional.ofNullable(status.batchSize()),
                Optional.of(spec.training() ? "best-effort" : "slo"), spec.llm(), Optional.ofNullable(spec.klcThreshold()),
                Optional.ofNullable(status.servingThroughputRps()),
                rateAtLimit("status", status.servingThroughputRps(), status.servingThroughputRpsAtLimit(), problems)));
    }

    /** The rate at the limit if it is a number in [the rate at the request (0 when unknown), the most a trial reports]. */
    static Optional<Double> rateAtLimit(String part, Double atRequest, Double atLimit, List<FieldError> problems) {
        if (atLimit == null) {
            return Optional.empty();
        }
        double low = atRequest == null ? 0 : atRequest;
        if (atLimit >= low && atLimit <= TrialReport.MAX_THROUGHPUT) {
            return Optional.of(atLimit);
        }
        problems.add(new FieldError(part + ".servingThroughputRpsAtLimit", String.valueOf(atLimit), atRequest == null
                ? "a number in 0..1e7"
                : "a number in " + shown(atRequest) + "..1e7, at least " + part + ".servingThroughputRps (a larger share "
                        + "does not serve less)"));
        return Optional.empty();
    }

    /** A rate as a person would write it: 6 significant digits, no trailing zeros. */
    private static String shown(double v) {
        return Double.isFinite(v) ? new BigDecimal(v).round(new MathContext(6)).stripTrailingZeros().toPlainString()
                : String.valueOf(v);
    }

    /** Whether the status was written for the spec as it is now. */
    public boolean current() {
        Long generation = getMetadata() == null ? null : getMetadata().getGeneration();
        return getStatus() != null && (generation == null || generation.equals(getStatus().observedGeneration()));
    }

    /** Whether the status has the condition with status "True". */
    public boolean conditionTrue(String type) {
        return condition(type).map(c -> "True".equals(c.getStatus())).orElse(false);
    }

    public Optional<Condition> condition(String type) {
        if (getStatus() == null || getStatus().conditions() == null) {
            return Optional.empty();
        }
        return getStatus().conditions().stream().filter(c -> type.equals(c.getType())).findFirst();
    }
}
