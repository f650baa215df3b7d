package io.dilu.cli;

import io.dilu.core.profiling.HybridGrowthSearch;
import io.dilu.core.profiling.InferenceProfile;
import io.dilu.core.profiling.InferenceSearch;
import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.Trial;
import io.dilu.core.profiling.TraversalSearch;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./dilu profile --table FILE --slo SECONDS}: the inference searches replayed on a measured sweep; {@code
 * ./dilu profile --local [--model NAME]}: the searches run by real trials of emulated models on the emulated GPU.
 */
@Command(name = "profile", mixinStandardHelpOptions = true, sortOptions = false, description = {
        "Replay a measured sweep (--table, --slo) with Hybrid Growth Search and the traversal baseline, or profile the "
                + "emulated models by real trials on the emulated GPU (--local) (docs/profiler.md).",
        "Prints each search's trials in order (batch, SM, latency, throughput efficacy TE = batch / (latency x SM), "
                + "whether one batch runs within SLO/2), its choice, and the choice's TE against the best SLO-meeting "
                + "TE; ends with BENCH lines. A setting the table lacks, or a trial that fails, is a failed trial.",
        "The traversal asks for SM 10..100 in steps of 10 times batch 1..32 (60 trials)."})
final class ProfileCommand implements Callable<Integer> {

    /** The longest SLO accepted, in seconds. */
    static final double MAX_SLO_SECONDS = 3600;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--table", paramLabel = "FILE", description = "The sweep: CSV with header "
            + ProfileTable.HEADER + ", one row per measured setting (batch_size 1.." + ProfileTable.MAX_BATCH
            + ", sm_percent 1..100, latency_s > 0 of one batch, throughput_rps >= 0)")
    Path table;

    @Option(names = "--slo", paramLabel = "SECONDS", description = "With --table: end-to-end latency objective, "
            + "in (0, 3600] seconds; a setting meets it when one batch executes within half of it")
    Double slo;

    @Option(names = "--local", description = "Profile the emulated models (--model) by trials: each trial runs the "
            + "model's workload as a process on an emulated GPU of its own, at the SM share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) "
            + "and batch (DILU_BATCH_SIZE) asked, and reads its DILU_TRIAL report. Needs the native build (--native)")
    boolean local;

    @Option(names = "--model", paramLabel = "NAME", description = "With --local: one model (repeatable; default all)")
    List<String> models = new ArrayList<>();

    @Option(names = "--out", paramLabel = "DIR", description = "With --local: also write each model's GpuFunctionProfile "
            + "to DIR/NAME.yaml, as the profiler on Kubernetes would have written it (settings, the rates at the request and "
            + "at the limit, every trial; Hybrid Growth Search's for an inference model); ./dilu simulate coscaling "
            + "--profile reads it")
    Path outDir;

    @Option(names = "--native", paramLabel = "DIR", description = "With --local: the CMake build of hook-native, holding "
            + "bin/emu-infer and bin/emu-train (default ${DEFAULT-VALUE})")
    Path nativeDir = LocalCommand.defaultNativeDir();

    /** Runs the table and remembers the settings asked, in order (each once: the searches never repeat one). */
    private record Recording(ProfileTable table, List<int[]> asked) implements Trial {
        @Override
        public Measurement run(int sm, int batch) {
            asked.add(new int[] {sm, batch});
            return table.run(sm, batch);
        }
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (local) {
            if (table != null || slo != null) {
                err.println("--local runs each model at its own SLO: --table and --slo are not allowed with it");
                return 2;
            }
            return LocalCommand.run(out, err, nativeDir, models, outDir);
        }
        if (table == null || slo == null) {
            err.println("--table FILE and --slo SECONDS are required (or --local)");
            return 2;
        }
        if (!models.isEmpty() || outDir != null) {
            err.println((outDir != null ? "--out" : "--model") + " is for --local");
            return 2;
        }
        if (!(slo > 0 && slo <= MAX_SLO_SECONDS)) {
            err.println("--slo must be in (0, " + (int) MAX_SLO_SECONDS + "] seconds, got " + slo);
            return 2;
        }
        ProfileTable t;
        try (var in = Files.newBufferedReader(table, StandardCharsets.UTF_8)) {
            t = ProfileTable.read(in, table.getFileName().toString());
        } catch (NoSuchFileException e) {
            err.println("--table " + table + ": no such file");
            return 2;
        } catch (ProfileTable.InvalidTableException e) {
            err.println(e.getMessage());
            return 2;
        }
        Optional<ProfileTable.Row> best = t.best(slo);
        out.printf(Locale.ROOT, "table %s: %d measured settings, SLO %.4g s (one batch within %.4g s)%n",
                t.name(), t.rows().size(), slo, slo / 2);
        out.println(best.map(r -> String.format(Locale.ROOT, "best SLO-meeting setting in the table: SM %d batch %d TE %.3f",
                r.smPercent(), r.batchSize(), ProfileTable.efficacy(r))).orElse("no setting in the table meets the SLO"));
        Replay hgs = replay(out, "Hybrid Growth Search", new HybridGrowthSearch(), t, best);
        Replay all = replay(out, "Traversal", new TraversalSearch(), t, best);
        Optional<InferenceProfile> chosen = hgs.choice();
        // No choice (nothing met the SLO): SM 0, batch 0 and a ratio of 0.
        double ratio = chosen.isPresent() && best.isPresent()
                ? chosen.get().throughputEfficacy() / ProfileTable.efficacy(best.get()) : 0;
        out.printf(Locale.ROOT, "BENCH profile table=%s hgs_trials=%d chosen_sm=%d chosen_batch=%d te_vs_best=%.2f "
                        + "traversal_trials=%d%n", t.name(), hgs.trials(),
                chosen.map(InferenceProfile::smRequest).orElse(0), chosen.map(InferenceProfile::batchSize).orElse(0),
                ratio, all.trials());
        out.flush();
        return 0;
    }

    /** What one search chose and how many distinct settings it asked for. */
    private record Replay(Optional<InferenceProfile> choice, int trials) {}

    private Replay replay(PrintWriter out, String title, InferenceSearch search, ProfileTable t,
            Optional<ProfileTable.Row> best) {
        Recording rec = new Recording(t, new ArrayList<>());
        Optional<InferenceProfile> p = search.search(rec, slo * 1000);
        out.printf(Locale.ROOT, "%n%s: %d trials%n", title, rec.asked().size());
        out.printf(Locale.ROOT, "%5s %6s %4s %12s %10s %s%n", "trial", "batch", "SM", "latency_s", "TE", "meets SLO");
        int n = 0;
        for (int[] s : rec.asked()) {
            Optional<ProfileTable.Row> row = t.at(s[0], s[1]);
            out.printf(Locale.ROOT, "%5d %6d %4d %12s %10s %s%n", ++n, s[1], s[0],
                    row.map(r -> String.format(Locale.ROOT, "%.6g", r.latencySeconds())).orElse("-"),
                    row.map(r -> String.format(Locale.ROOT, "%.3f", ProfileTable.efficacy(r))).orElse("-"),
                    row.isEmpty() ? "no (not in the table)" : row.get().latencySeconds() <= slo / 2 ? "yes" : "no");
        }
        if (p.isEmpty()) {
            out.println("choice: none, no trial met the SLO");
        } else {
            InferenceProfile c = p.get();
            out.printf(Locale.ROOT, "choice: SM %d batch %d TE %.3f = %.2f of the table's best%n", c.smRequest(),
                    c.batchSize(), c.throughputEfficacy(),
                    best.map(b -> c.throughputEfficacy() / ProfileTable.efficacy(b)).orElse(0.0));
            out.println(Double.isNaN(c.servingThroughputAtLimit())
                    ? String.format(Locale.ROOT, "at the limit, SM %d batch %d: unknown (not in the table)", c.smLimit(), c.batchSize())
                    : String.format(Locale.ROOT, "at the limit, SM %d batch %d: %.4g requests/s, %.2f times the request's",
                            c.smLimit(), c.batchSize(), c.servingThroughputAtLimit(),
                            c.servingThroughputAtLimit() / c.servingThroughput()));
        }
        return new Replay(p, rec.asked().size());
    }
}
