package io.dilu.simulator.coscaling;

import io.dilu.core.profiling.TrialReport;
import io.dilu.core.quota.FieldError;
import io.dilu.core.quota.Quota;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSettings;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.kube.profile.TrialRecord;
import io.dilu.trials.ProfileFile;
import io.dilu.trials.ProfileFile.InvalidProfileException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where the co-scaling model's function comes from ({@code --profile}): a GpuFunctionProfile, as the profiler writes
 * it ({@code ./dilu profile --local --out DIR}) or as {@code kubectl get gfp NAME -o yaml} prints it, its settings in
 * the status (profiled and Ready) or in the spec (by hand); one of the profiles shipped with the simulator, the
 * emulated models as the profiler found them on the emulated GPU; or the mid-size assumption
 * ({@link FunctionProfile#midSize}).
 *
 * <p>From a GpuFunctionProfile: the SLO from {@code spec.sloMillis}; the shares from {@code smRequest} and {@code
 * smLimit} ({@code min(100, 2 × request)} when absent); the rates at the request and at the limit from {@code
 * servingThroughputRps} and {@code servingThroughputRpsAtLimit}; the batch's run time from the trial at the request
 * and batch ({@code batch / rate} without one); the memory; and the rate with a whole GPU, which the profiler does not
 * measure, from the trial at SM 100 and the batch when there is one, else by Amdahl's law through the two measured
 * shares (a batch takes {@code a + b / share}, {@code a ≥ 0}): exact for a grid that fills the GPU in whole waves, low
 * (so Exclusive is judged on a smaller instance than it gets) where the last wave is part empty. The cold start is
 * not in a profile: an option, the mid-size model's 8 s unless given.
 */
public final class FunctionProfiles {

    /** {@code --profile mid-size}: the assumption the model began with. */
    public static final String MID_SIZE = "mid-size";
    /**
     * The bench's function, for every trace: BERT-Large, the one emulated inference model of a mid-size function's
     * scale (tens of requests per second at a tenth of a GPU, so the traces' tens of rps need a few instances and
     * their bursts go past one instance's request); ResNet-50 and MobileNet serve thousands at their request (one
     * instance would carry every trace), and a Llama decoding step serves tokens, not requests.
     */
    public static final String BENCH = "bert-large";
    /** The profiles shipped in the simulator's resources ({@code coscaling/profiles/NAME.yaml}). */
    public static final List<String> SHIPPED = List.of(BENCH);

    private FunctionProfiles() {}

    /**
     * {@code --profile VALUE}: {@value #MID_SIZE}, a shipped profile's name, or a file.
     *
     * @throws InvalidProfileException naming the file, the line and the field at fault
     * @throws NoSuchFileException when the file is not there
     */
    public static FunctionProfile named(String value, int coldStartSeconds) throws IOException {
        if (value.equals(MID_SIZE)) {
            return FunctionProfile.midSize("f").withColdStart(coldStartSeconds);
        }
        if (SHIPPED.contains(value)) {
            return of(ProfileFile.read(shippedText(value), value + ".yaml"), coldStartSeconds);
        }
        Path file = Path.of(value);
        if (Files.size(file) > ProfileFile.MAX_CHARS) {
            throw new InvalidProfileException(value, 1, "a profile must be at most " + ProfileFile.MAX_CHARS + " bytes");
        }
        return of(ProfileFile.read(Files.readString(file, StandardCharsets.UTF_8), value), coldStartSeconds);
    }

    /** The bench's function: {@link #BENCH} as shipped, with the default cold start. */
    public static FunctionProfile bench() {
        try {
            return named(BENCH, FunctionProfile.DEFAULT_COLD_START_SECONDS);
        } catch (IOException e) {
            throw new UncheckedIOException("the shipped profile " + BENCH + " does not read", e);
        }
    }

    /** A shipped profile's text, as the profiler wrote it. */
    public static String shippedText(String name) throws IOException {
        try (InputStream in = FunctionProfiles.class.getResourceAsStream("/coscaling/profiles/" + name + ".yaml")) {
            if (in == null) {
                throw new IOException("coscaling/profiles/" + name + ".yaml is not on the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** The function a GpuFunctionProfile describes. */
    public static FunctionProfile of(ProfileFile.Read r, int coldStartSeconds) throws InvalidProfileException {
        GpuFunctionProfile p = r.profile();
        ProfileSpec spec = p.getSpec();
        if (spec == null || spec.function() == null || spec.function().isBlank()) {
            throw r.error("spec.function", "is missing: a profile names its function in its spec");
        }
        if (spec.training()) {
            throw r.error("spec.type", "must be inference or llm-inference for co-scaling, got training (a training job "
                    + "serves no requests)");
        }
        List<FieldError> problems = new ArrayList<>();
        Optional<ProfileSettings> read = p.settings(problems);
        if (!problems.isEmpty()) {
            FieldError e = problems.getFirst();
            throw r.error(e.field(), "must be " + e.allowed() + ", got " + e.value());
        }
        ProfileSettings s = read.orElseThrow(() -> noSettings(r));
        String part = spec.handWritten() ? "spec" : "status";
        if (spec.sloMillis() == null || spec.sloMillis() < 1 || spec.sloMillis() > 3_600_000) {
            throw r.error("spec.sloMillis", "must be an integer in 1..3600000 (the SLO every request is judged by, ms), got "
                    + spec.sloMillis());
        }
        int request = s.smRequest();
        if (request < Quota.MIN_SM || request > Quota.MAX_SM) {
            throw r.error(part + ".smRequest", "must be an integer percent in 1..100, got " + request);
        }
        int limit = s.smLimit().orElse(Quota.defaultLimit(request));
        if (limit < request || limit > Quota.MAX_SM) {
            throw r.error(part + ".smLimit", "must be an integer percent in " + request + "..100 (smRequest..100), got " + limit);
        }
        int batch = s.batchSize().orElse(1);
        if (batch < 1 || batch > 4096) {
            throw r.error(part + ".batchSize", "must be an integer in 1..4096, got " + batch);
        }
        double atRequest = s.servingThroughputRps().orElseThrow(() -> r.error(part + ".servingThroughputRps",
                "is missing: the co-scaling model needs what an instance serves at its SM request"));
        if (!(atRequest > 0 && atRequest <= TrialReport.MAX_THROUGHPUT)) {
            throw r.error(part + ".servingThroughputRps", "must be a number in (0, 1e7], got " + atRequest);
        }
        double atLimit = s.servingThroughputRpsAtLimit().orElseThrow(() -> r.error(part + ".servingThroughputRpsAtLimit",
                "is missing: the co-scaling model needs what an instance serves at its SM limit (the profiler measures it "
                        + "with one trial at the limit; profile again, or write it in the spec)"));
        if (s.memoryMiB() < 0) {
            throw r.error(part + ".memoryMiB", "must be an integer >= 0, got " + s.memoryMiB());
        }
        List<TrialRecord> trials = Optional.ofNullable(spec.handWritten() ? spec.trials()
                : p.getStatus().trials()).orElse(List.of());
        Optional<Double> batchMillis = latencyAt(r, part, trials, request, batch);
        double service = batchMillis.map(ms -> ms / 1000).orElse(batch / atRequest);
        double whole = limit == 100 ? atLimit : latencyAt(r, part, trials, 100, batch).map(ms -> Math.max(atLimit, batch / (ms / 1000)))
                .orElse(amdahl(batch, request / 100.0, atRequest, limit / 100.0, atLimit));
        try {
            return new FunctionProfile(spec.function(), spec.sloMillis() / 1000.0, service, atRequest, atLimit, request / 100.0,
                    limit / 100.0, whole, coldStartSeconds, s.memoryMiB());
        } catch (IllegalArgumentException e) {
            throw new InvalidProfileException(r.source(), r.line(part), e.getMessage());
        }
    }

    /** Why a profile gives no settings: no status, not Ready (and why), or Ready for an older spec. */
    private static InvalidProfileException noSettings(ProfileFile.Read r) {
        GpuFunctionProfile p = r.profile();
        if (p.getStatus() == null) {
            return r.error("status", "is missing: the profile has no settings (neither spec.smRequest by hand nor a status "
                    + "the profiler made Ready)");
        }
        if (!p.conditionTrue(GpuFunctionProfile.READY)) {
            String failed = p.condition(GpuFunctionProfile.FAILED).filter(c -> "True".equals(c.getStatus()))
                    .map(c -> " (Failed: " + c.getReason() + ", " + c.getMessage() + ")").orElse("");
            return r.error("status.conditions", "must have Ready=True: profiling has not finished" + failed);
        }
        if (p.getStatus().smRequest() == null) {
            return r.error("status.smRequest", "is missing from a Ready status");
        }
        return r.error("status.observedGeneration", "must be metadata.generation (" + p.getMetadata().getGeneration()
                + "): the status is for an older spec, got " + p.getStatus().observedGeneration());
    }

    /** One batch's latency, ms, at a setting the trials measured; a recorded latency out of range is an error. */
    private static Optional<Double> latencyAt(ProfileFile.Read r, String part, List<TrialRecord> trials, int sm, int batch)
            throws InvalidProfileException {
        for (int i = 0; i < trials.size(); i++) {
            TrialRecord t = trials.get(i);
            if (t != null && t.smPercent() != null && t.smPercent() == sm && t.batchSize() != null && t.batchSize() == batch
                    && t.latencyMillis() != null) {
                if (!(t.latencyMillis() > 0 && t.latencyMillis() <= 3_600_000)) {
                    throw r.error(part + ".trials." + i + ".latencyMillis", "must be a number in (0, 3600000] (ms), got "
                            + t.latencyMillis());
                }
                return Optional.of(t.latencyMillis());
            }
        }
        return Optional.empty();
    }

    /**
     * The rate with a whole GPU by Amdahl's law through the rates at two shares: a batch takes {@code a + b / share},
     * {@code a ≥ 0} (a speed-up better than linear, as whole waves give, is taken as linear through the limit's point).
     */
    static double amdahl(int batch, double requestShare, double atRequest, double limitShare, double atLimit) {
        double atRequestSeconds = batch / atRequest;
        double atLimitSeconds = batch / atLimit;
        double b = (atRequestSeconds - atLimitSeconds) / (1 / requestShare - 1 / limitShare);
        double a = atRequestSeconds - b / requestShare;
        if (a < 0) {
            a = 0;
            b = atLimitSeconds * limitShare;
        }
        return Math.max(atLimit, batch / (a + b));
    }
}
