package io.dilu.autoscaler.profile;

import io.dilu.core.profiling.HybridGrowthSearch;
import io.dilu.core.profiling.InferenceProfile;
import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.Trial;
import io.dilu.core.profiling.TrainingProfile;
import io.dilu.core.profiling.TrainingProfiler;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Profiles one GpuFunctionProfile: runs the search (Hybrid Growth Search for inference, the binary search for
 * training) with trials that {@link Runner} runs as pods, recording every trial in the status as it ends, so that
 * a profiler that restarts (or a new leader) resumes where the last one stopped instead of running the trials
 * again. A trial that fails is retried; one that cannot succeed (its image does not pull) fails the profile at
 * once, with the reason.
 */
final class ProfileJob {

    /** Runs one attempt of one trial and waits for its outcome (never {@link TrialPods.Running}). */
    interface Runner {
        TrialPods.Outcome run(GpuFunctionProfile profile, int smPercent, int batchSize, int attempt) throws InterruptedException;
    }

    /** Writes the profile's status; false when the profile is gone or its spec changed (the job is then moot). */
    interface StatusWriter {
        boolean write(GpuFunctionProfile profile, ProfileStatus status);
    }

    static final int MAX_SLO_MILLIS = 3_600_000;
    /** A setting whose trial failed: it meets no SLO and serves nothing. */
    private static final Measurement UNMEASURED = new Measurement(Double.POSITIVE_INFINITY, 0);

    private final GpuFunctionProfile profile;
    private final long generation;
    private final Runner runner;
    private final StatusWriter writer;
    private final Function<String, String> gpuOfNode;
    private final int retries;
    private final long trialMemoryMib;
    private final InstantSource clock;
    private final int newTrials;
    private final List<TrialRecord> trials = new ArrayList<>();
    private ProfileStatus last;
    private int ran;

    /**
     * @param gpuOfNode the GPU model of a node (an emulated GPU's name says so), recorded with each trial
     * @param retries further attempts of a trial whose pod failed
     * @param trialMemoryMib the GPU memory each trial pod may use: the profile's memory when the workload does not
     *     report what it used (it keeps what it was measured with)
     */
    ProfileJob(GpuFunctionProfile profile, Runner runner, StatusWriter writer, Function<String, String> gpuOfNode, int retries,
            long trialMemoryMib, InstantSource clock) {
        this(profile, runner, writer, gpuOfNode, retries, trialMemoryMib, clock, Integer.MAX_VALUE);
    }

    /**
     * @param newTrials the most settings this job runs by pod (with their retries) before it stops and says there is
     *     more to do: the profiler runs one at a time, so that each profile queues again for a slot after each trial
     */
    ProfileJob(GpuFunctionProfile profile, Runner runner, StatusWriter writer, Function<String, String> gpuOfNode, int retries,
            long trialMemoryMib, InstantSource clock, int newTrials) {
        this.profile = profile;
        this.generation = Optional.ofNullable(profile.getMetadata().getGeneration()).orElse(0L);
        this.runner = runner;
        this.writer = writer;
        this.gpuOfNode = gpuOfNode;
        this.retries = retries;
        this.trialMemoryMib = trialMemoryMib;
        this.clock = clock;
        this.newTrials = newTrials;
        this.last = profile.getStatus();
        if (profile.current() && profile.getStatus().trials() != null) {
            trials.addAll(profile.getStatus().trials());
        }
    }

    /** Whether a profile is the profiler's to work on: settings not written by hand, and no final status for this spec. */
    static boolean needsWork(GpuFunctionProfile p) {
        return p.getSpec() != null && !p.getSpec().handWritten() && p.getMetadata().getDeletionTimestamp() == null
                && !(p.current() && (p.conditionTrue(GpuFunctionProfile.READY) || p.conditionTrue(GpuFunctionProfile.FAILED)));
    }

    /** What is wrong with a spec to profile, naming the field and what it must be. */
    static Optional<String> invalid(ProfileSpec spec) {
        if (spec.image() == null || spec.image().isBlank()) {
            return Optional.of("spec.image must name the function's image to profile it (or give spec.smRequest and "
                    + "spec.memoryMiB to set the settings by hand)");
        }
        if (!spec.training() && (spec.sloMillis() == null || spec.sloMillis() < 1 || spec.sloMillis() > MAX_SLO_MILLIS)) {
            return Optional.of("spec.sloMillis must be 1.." + MAX_SLO_MILLIS + " to profile an inference function, got "
                    + spec.sloMillis());
        }
        return Optional.empty();
    }

    /**
     * Runs the search, replaying the trials in the status, until it ends (the final status written) or it needs more
     * new trials than this job may run; returns early when the profile changed or went.
     *
     * @return false when the search stopped for more trials (the profile wants another job), true otherwise
     */
    boolean run() throws InterruptedException {
        ProfileSpec spec = profile.getSpec();
        Optional<String> invalid = invalid(spec);
        if (invalid.isPresent()) {
            write(ProfileStatuses.failed(generation, trials, "InvalidSpec", invalid.get(), last, clock.instant()));
            return true;
        }
        // A job that continues the previous one's search finds Profiling=True already.
        boolean profiling = profile.current() && profile.conditionTrue(GpuFunctionProfile.PROFILING);
        if (!profiling && !write(ProfileStatuses.profiling(generation, trials, trials.isEmpty() ? "starting" : "resuming after "
                + trials.size() + " trials", last, clock.instant()))) {
            return true;
        }
        try {
            ProfileStatuses.Chosen chosen = spec.training() ? training() : inference(spec);
            write(ProfileStatuses.ready(generation, trials, chosen, last, clock.instant()));
        } catch (Failed f) {
            write(ProfileStatuses.failed(generation, trials, f.reason, f.getMessage(), last, clock.instant()));
        } catch (Moot m) {
            // the profile changed or went: its next job starts from its new spec
        } catch (Yield y) {
            return false;
        } catch (Interrupted i) {
            throw i.cause;
        }
        return true;
    }

    private ProfileStatuses.Chosen inference(ProfileSpec spec) {
        HybridGrowthSearch.Steps steps = spec.maxBatchSize() == null ? HybridGrowthSearch.Steps.PAPER
                : HybridGrowthSearch.Steps.PAPER.withMaxBatch(spec.maxBatchSize());
        InferenceProfile p = new HybridGrowthSearch(steps).search(this::trial, spec.sloMillis())
                .orElseThrow(() -> new Failed("NoSettingMeetsSlo", "no setting tried executes a batch within half the SLO ("
                        + spec.sloMillis() / 2.0 + " ms); trials: " + trials.size()));
        // The search's last trial was at the limit (unless it had run that setting): the status has both rates.
        return new ProfileStatuses.Chosen(p.smRequest(), p.smLimit(), p.batchSize(), memoryAt(p.smRequest(), p.batchSize()),
                p.servingThroughput(), Double.isNaN(p.servingThroughputAtLimit()) ? null : p.servingThroughputAtLimit(),
                p.trials());
    }

    private ProfileStatuses.Chosen training() {
        TrainingProfile p = new TrainingProfiler().profile(this::trial);
        long memory = trials.stream().mapToLong(t -> t.memoryMiB() == null ? 0 : t.memoryMiB()).max().orElse(0);
        // Iterations per second at the request and the limit (p) are not a serving rate: a training job is not served.
        return new ProfileStatuses.Chosen(p.smRequest(), p.smLimit(), 1, memory > 0 ? memory : trialMemoryMib, null, null,
                p.trials());
    }

    /** What the chosen trial used; what the trials were given when the workload did not say. */
    private long memoryAt(int sm, int batch) {
        long reported = trials.stream().filter(t -> t.smPercent() == sm && t.batchSize() == batch)
                .mapToLong(t -> t.memoryMiB() == null ? 0 : t.memoryMiB()).max().orElse(0);
        return reported > 0 ? reported : trialMemoryMib;
    }

    /** One trial: from the status when this spec's trial already ran, else by pod, retried. */
    private Measurement trial(int sm, int batch) {
        for (TrialRecord t : trials) {
            if (t.smPercent() == sm && t.batchSize() == batch) {
                return t.latencyMillis() != null && t.throughput() != null ? new Measurement(t.latencyMillis(), t.throughput())
                        : UNMEASURED;
            }
        }
        if (ran >= newTrials) {
            throw new Yield();
        }
        ran++;
        String lastReason = "";
        for (int attempt = 0; attempt <= retries; attempt++) {
            TrialPods.Outcome outcome;
            try {
                outcome = runner.run(profile, sm, batch, attempt);
            } catch (InterruptedException e) {
                throw new Interrupted(e);
            }
            switch (outcome) {
                case TrialPods.Measured m -> {
                    trials.add(new TrialRecord(sm, batch, m.report().latencySeconds() * 1000, m.report().throughput(),
                            m.report().memoryMib(), TrialPods.name(profile.getMetadata().getName(), sm, batch, attempt),
                            m.node() == null ? null : gpuOfNode.apply(m.node()), null));
                    if (!write(ProfileStatuses.profiling(generation, trials, "trial " + trials.size() + ": SM " + sm
                            + "% batch " + batch, last, clock.instant()))) {
                        throw new Moot();
                    }
                    return m.report().measurement();
                }
                case TrialPods.Fatal f -> throw new Failed("TrialFailed", "SM " + sm + "% batch " + batch + ": " + f.reason());
                case TrialPods.Retry r -> lastReason = r.reason();
                case TrialPods.Running r -> lastReason = "no outcome";
            }
        }
        String failure = "SM " + sm + "% batch " + batch + " failed " + (retries + 1) + " times; last: " + lastReason;
        if (trials.stream().noneMatch(t -> t.latencyMillis() != null)) {
            // Nothing has run yet: the function itself does not run, and more settings would fail alike.
            throw new Failed("TrialFailed", failure);
        }
        // Others ran: this setting is out of reach (a batch past the memory, say); the search counts it as missing the SLO.
        trials.add(new TrialRecord(sm, batch, null, null, null, TrialPods.name(profile.getMetadata().getName(), sm, batch, retries),
                null, failure));
        if (!write(ProfileStatuses.profiling(generation, trials, "trial " + trials.size() + " failed: " + failure, last,
                clock.instant()))) {
            throw new Moot();
        }
        return UNMEASURED;
    }

    private boolean write(ProfileStatus status) {
        boolean written = writer.write(profile, status);
        if (written) {
            last = status;
        }
        return written;
    }

    /** The profile cannot be profiled; the reason is a condition reason, the message says why. */
    private static final class Failed extends RuntimeException {
        final String reason;

        Failed(String reason, String message) {
            super(message, null, false, false);
            this.reason = reason;
        }
    }

    private static final class Moot extends RuntimeException {
        Moot() {
            super(null, null, false, false);
        }
    }

    /** This job ran the trials it may: the search stops here, and the next job replays it from the status. */
    private static final class Yield extends RuntimeException {
        Yield() {
            super(null, null, false, false);
        }
    }

    /** Carries an interruption through the search, whose trials cannot throw it. */
    private static final class Interrupted extends RuntimeException {
        final InterruptedException cause;

        Interrupted(InterruptedException cause) {
            super(null, cause, false, false);
            this.cause = cause;
        }
    }
}
