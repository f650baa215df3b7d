package io.dilu.trials;

import io.dilu.core.profiling.HybridGrowthSearch;
import io.dilu.core.profiling.InferenceProfile;
import io.dilu.core.profiling.InferenceSearch;
import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.TrainingProfile;
import io.dilu.core.profiling.TrainingProfiler;
import io.dilu.core.profiling.TraversalSearch;
import io.dilu.kube.profile.GpuFunctionProfile;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Profiling by real trials on the emulated GPU ({@code ./dilu profile --local}, {@code ./dilu bench profiling}):
 * each inference model by Hybrid Growth Search (with its one trial at the chosen limit) and by the traversal, the
 * training job by the binary search, all at their shipped settings, every trial a run of the workload. Prints each
 * search's trials and choice, and ends with one {@code BENCH profiling} line per model; with a directory to write
 * to, also each model's GpuFunctionProfile as the profiler would have written it ({@link LocalProfiles}), Hybrid
 * Growth Search's for an inference model.
 */
public final class LocalProfiling {

    /** Timed batches per inference trial: emulated time is exact, so more would only take longer. */
    public static final int TRIAL_BATCHES = 10;
    /** Timed iterations per training trial. */
    public static final int TRAINING_ITERATIONS = 5;
    /** The longest a trial may run before it is a failed one. */
    public static final Duration TRIAL_TIMEOUT = Duration.ofSeconds(120);
    /** The traversal's batch sizes, columns of its grid. */
    private static final List<Integer> BATCHES = List.of(1, 2, 4, 8, 16, 32);

    private final PrintWriter out;
    private final Function<EmulatedModel, ReportingTrial> trials;
    private final List<GpuFunctionProfile> found = new ArrayList<>();

    /** @param trials a fresh trial of a model for each search (a new run per setting) */
    public LocalProfiling(PrintWriter out, Function<EmulatedModel, ReportingTrial> trials) {
        this.out = out;
        this.trials = trials;
    }

    /** Trials as processes of the workloads built in {@code nativeDir} (hook-native/target/cmake). */
    public static Function<EmulatedModel, ReportingTrial> processes(Path nativeDir) {
        return m -> new ProcessTrial(m.trialCommand(nativeDir, m.training() ? TRAINING_ITERATIONS : TRIAL_BATCHES),
                TRIAL_TIMEOUT);
    }

    /** Profiles every model in order; prints the BENCH lines, one per model, last. */
    public void run(List<EmulatedModel> models) {
        try {
            run(models, null);
        } catch (IOException e) {
            throw new IllegalStateException("nothing is written without a directory", e);
        }
    }

    /**
     * As {@link #run(List)}; with {@code profiles} (null for none), also writes each model's GpuFunctionProfile there,
     * as {@code NAME.yaml}, before the BENCH lines.
     */
    public void run(List<EmulatedModel> models, Path profiles) throws IOException {
        List<String> bench = new ArrayList<>();
        found.clear();
        for (EmulatedModel m : models) {
            long start = System.nanoTime();
            try (HostLateness probe = HostLateness.start(start)) {
                String line = m.training() ? training(m) : inference(m);
                HostLateness.Window host = probe.window(0, Double.MAX_VALUE);
                bench.add(line + " " + host.keys());
                out.printf(Locale.ROOT, "%s: profiled in %.1f s of wall-clock time; the host ran a thread waking every %d ms"
                        + " %s%n", m.name(), (System.nanoTime() - start) / 1e9, HostLateness.PERIOD_NANOS / 1_000_000,
                        host.describe());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while profiling " + m.name(), e);
            }
        }
        out.println();
        if (profiles != null) {
            Files.createDirectories(profiles);
            for (int i = 0; i < models.size(); i++) {
                Path file = profiles.resolve(models.get(i).name() + ".yaml");
                Files.writeString(file, ProfileFile.yaml(found.get(i), LocalProfiles.comment(models.get(i))), StandardCharsets.UTF_8);
                out.println("wrote " + file);
            }
            out.println();
        }
        bench.forEach(out::println);
        out.flush();
    }

    /** The GpuFunctionProfile of each model the last run profiled, in order. */
    public List<GpuFunctionProfile> profiles() {
        return List.copyOf(found);
    }

    /** Runs the trials asked for and keeps them in order (the searches never ask for one setting twice). */
    private static final class Recording implements ReportingTrial {
        final ReportingTrial delegate;
        final List<TrialRun> runs = new ArrayList<>();

        Recording(ReportingTrial delegate) {
            this.delegate = delegate;
        }

        @Override
        public TrialRun attempt(int sm, int batch) {
            TrialRun r = delegate.attempt(sm, batch);
            runs.add(r);
            return r;
        }

        Optional<TrialRun> at(int sm, int batch) {
            return runs.stream().filter(r -> r.smPercent() == sm && r.batchSize() == batch).findFirst();
        }
    }

    private String inference(EmulatedModel m) {
        double sloMs = m.sloSeconds() * 1000;
        out.printf(Locale.ROOT, "%n== %s: inference, SLO %.0f ms (one batch within %.1f ms), trials on the emulated GPU%n",
                m.name(), sloMs, sloMs / 2);
        out.println("   " + m.basis());
        Recording hgsRuns = new Recording(trials.apply(m));
        Optional<InferenceProfile> hgs = new HybridGrowthSearch().search(hgsRuns, sloMs);
        out.printf(Locale.ROOT, "%nHybrid Growth Search: %d trials%n", hgsRuns.runs.size());
        out.printf(Locale.ROOT, "%5s %6s %4s %12s %10s %11s  %s%n", "trial", "batch", "SM", "latency_ms", "TE",
                "memory_MiB", "meets SLO");
        int n = 0;
        for (TrialRun r : hgsRuns.runs) {
            Measurement x = r.measurement();
            boolean failed = r.report().isEmpty();
            out.printf(Locale.ROOT, "%5d %6d %4d %12s %10s %11s  %s%n", ++n, r.batchSize(), r.smPercent(),
                    failed ? "-" : String.format(Locale.ROOT, "%.3f", x.latencyMillis()),
                    failed ? "-" : String.format(Locale.ROOT, "%.3f", te(r)),
                    r.report().map(t -> Long.toString(t.memoryMib())).orElse("-"),
                    failed ? "no: " + r.failure() : x.latencyMillis() <= sloMs / 2 ? "yes" : "no");
        }
        out.println("choice: " + hgs.map(LocalProfiling::describe).orElse("none, no trial met the SLO"));
        hgs.ifPresent(p -> out.println(atLimit(p, hgsRuns.runs)));
        found.add(LocalProfiles.inference(m, hgs, hgsRuns.runs));

        Recording all = new Recording(trials.apply(m));
        Optional<InferenceProfile> best = new TraversalSearch().search(all, sloMs);
        out.printf(Locale.ROOT, "%nTraversal: %d trials; one batch's latency in ms, * where it meets the SLO%n", all.runs.size());
        out.printf(Locale.ROOT, "%10s", "SM \\ batch");
        BATCHES.forEach(b -> out.printf(Locale.ROOT, " %10d", b));
        out.println();
        Map<String, List<String>> failures = new LinkedHashMap<>();
        for (int sm = 10; sm <= 100; sm += 10) {
            out.printf(Locale.ROOT, "%10d", sm);
            for (int b : BATCHES) {
                Optional<TrialRun> r = all.at(sm, b);
                String cell = r.map(t -> t.report().isEmpty() ? "failed"
                        : String.format(Locale.ROOT, "%.3f%s", t.measurement().latencyMillis(),
                                t.measurement().latencyMillis() <= sloMs / 2 ? "*" : " ")).orElse("-");
                r.filter(t -> t.report().isEmpty()).ifPresent(t ->
                        failures.computeIfAbsent(t.failure(), k -> new ArrayList<>()).add("SM " + t.smPercent() + " batch " + t.batchSize()));
                out.printf(Locale.ROOT, " %10s", cell);
            }
            out.println();
        }
        failures.forEach((reason, where) -> out.printf(Locale.ROOT, "failed, %d trials (%s ... %s): %s%n", where.size(),
                where.getFirst(), where.getLast(), reason));
        out.println("best: " + best.map(LocalProfiling::describe).orElse("none, no trial met the SLO"));
        double ratio = hgs.isPresent() && best.isPresent()
                ? hgs.get().throughputEfficacy() / best.get().throughputEfficacy() : 0;
        out.printf(Locale.ROOT, "Hybrid Growth Search's choice reaches %.2f of the traversal's best TE, in %d trials instead of %d%n",
                ratio, hgsRuns.runs.size(), all.runs.size());
        return String.format(Locale.ROOT, "BENCH profiling model=%s hgs_trials=%d traversal_trials=%d te_vs_best=%.2f "
                        + "hgs_sm=%d hgs_batch=%d best_sm=%d best_batch=%d gpu=emulated",
                m.name(), hgsRuns.runs.size(), all.runs.size(), ratio,
                hgs.map(InferenceProfile::smRequest).orElse(0), hgs.map(InferenceProfile::batchSize).orElse(0),
                best.map(InferenceProfile::smRequest).orElse(0), best.map(InferenceProfile::batchSize).orElse(0));
    }

    private String training(EmulatedModel m) {
        out.printf(Locale.ROOT, "%n== %s: training, trials on the emulated GPU%n", m.name());
        out.println("   " + m.basis());
        Recording runs = new Recording(trials.apply(m));
        TrainingProfile p = new TrainingProfiler().profile(runs);
        double exclusive = p.exclusiveThroughput();
        out.printf(Locale.ROOT, "%nBinary search (request at 80%% of the throughput at SM 100 ± 2%%, limit within 2%% of it): "
                + "%d trials%n", runs.runs.size());
        out.printf(Locale.ROOT, "%5s %4s %14s %14s %10s%n", "trial", "SM", "iteration_ms", "iterations/s", "of SM 100");
        int n = 0;
        for (TrialRun r : runs.runs) {
            boolean failed = r.report().isEmpty();
            out.printf(Locale.ROOT, "%5d %4d %14s %14s %10s%s%n", ++n, r.smPercent(),
                    failed ? "-" : String.format(Locale.ROOT, "%.3f", r.measurement().latencyMillis()),
                    failed ? "-" : String.format(Locale.ROOT, "%.3f", r.measurement().throughput()),
                    failed ? "-" : String.format(Locale.ROOT, "%.3f", relative(r, exclusive)),
                    failed ? "  failed: " + r.failure() : "");
        }
        double atRequest = runs.at(p.smRequest(), 1).map(r -> relative(r, exclusive)).orElse(0.0);
        double atLimit = runs.at(p.smLimit(), 1).map(r -> relative(r, exclusive)).orElse(0.0);
        out.printf(Locale.ROOT, "request: SM %d (%.3f of the throughput at SM 100); limit: SM %d (%.3f)%n", p.smRequest(),
                atRequest, p.smLimit(), atLimit);
        found.add(LocalProfiles.training(m, p, runs.runs));
        return String.format(Locale.ROOT, "BENCH profiling model=%s training_trials=%d request=%d limit=%d "
                        + "request_throughput_vs_exclusive=%.3f limit_throughput_vs_exclusive=%.3f gpu=emulated",
                m.name(), runs.runs.size(), p.smRequest(), p.smLimit(), atRequest, atLimit);
    }

    /** What an instance serves at its limit, and which trial said so (the last, unless the search had run it). */
    private static String atLimit(InferenceProfile p, List<TrialRun> runs) {
        int trial = 1;
        while (trial < runs.size() && !(runs.get(trial - 1).smPercent() == p.smLimit() && runs.get(trial - 1).batchSize() == p.batchSize())) {
            trial++;
        }
        return Double.isNaN(p.servingThroughputAtLimit())
                ? String.format(Locale.ROOT, "limit: SM %d batch %d, rate unknown: its trial (%d) failed", p.smLimit(), p.batchSize(), trial)
                : String.format(Locale.ROOT, "limit: SM %d batch %d, %.1f requests/s, %.2f times the request's (trial %d)", p.smLimit(),
                        p.batchSize(), p.servingThroughputAtLimit(), p.servingThroughputAtLimit() / p.servingThroughput(), trial);
    }

    private static double relative(TrialRun r, double exclusive) {
        return exclusive > 0 ? r.measurement().throughput() / exclusive : 0;
    }

    private static double te(TrialRun r) {
        return InferenceSearch.efficacy(r.batchSize(), r.measurement().latencyMillis(), r.smPercent());
    }

    private static String describe(InferenceProfile p) {
        return String.format(Locale.ROOT, "SM %d batch %d, TE %.3f requests/s per SM percent, %.1f requests/s at that share",
                p.smRequest(), p.batchSize(), p.throughputEfficacy(), p.servingThroughput());
    }
}
