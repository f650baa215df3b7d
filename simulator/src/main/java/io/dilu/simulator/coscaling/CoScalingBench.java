package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The co-scaling simulator on the paper's three request patterns (an hour each, seeded) and the Azure LLM
 * code trace, one function each, BERT-Large as the profiler found it on the emulated GPU ({@link
 * FunctionProfiles#bench}), under every policy: cold starts,
 * SLO violation rate and GPU-seconds, one {@code BENCH coscaling} line per trace, and the figures and report of
 * {@link CoScalingReport}. A model, not a measurement:
 * see docs/coscaling.md for what it leaves out.
 */
public final class CoScalingBench {

    static final int SECONDS = 3600;
    static final long SEED = 42;

    private CoScalingBench() {}

    /** The policies the benches compare by default (this one's, {@code simulate coscaling}'s and the fleet's). */
    public static final List<String> COMPARED = List.of("dilu", "kpa", "fastgs", "infless", "exclusive");

    /** Every policy there is, each made fresh for a run (some carry state); dilu-paper only when asked for. */
    static Map<String, Function<FunctionProfile, CoScalingPolicy>> policies() {
        Map<String, Function<FunctionProfile, CoScalingPolicy>> p = new LinkedHashMap<>();
        p.put("dilu", DiluPolicy::new);
        p.put("dilu-alongside", DiluPolicy::alongside);
        p.put("dilu-no-parking", DiluPolicy::withoutParking);
        p.put("dilu-paper", f -> DiluPolicy.paper(f, 1.0));
        p.put("kpa", KpaPolicy::kpa);
        p.put("fastgs", FastGsPolicy::new);
        p.put("infless", InflessPolicy::new);
        p.put("exclusive", KpaPolicy::exclusive);
        return p;
    }

    /** The bench's traces: an hour of each seeded pattern, and the Azure LLM code trace. */
    public static List<RateTrace> traces() throws IOException {
        return List.of(pattern("bursty", SECONDS, SEED), pattern("periodic", SECONDS, SEED),
                pattern("sporadic", SECONDS, SEED), azureLlmCode());
    }

    /**
     * A seeded pattern at the bench's rates: bursty on a 30 rps base, periodic around 60 rps, sporadic at
     * 40 rps when active.
     *
     * @throws IllegalArgumentException for a name other than bursty, periodic, sporadic
     */
    public static RateTrace pattern(String name, int seconds, long seed) {
        return switch (name) {
            case "bursty" -> RatePatterns.bursty(seconds, 30, seed);
            case "periodic" -> RatePatterns.periodic(seconds, 60, seed);
            case "sporadic" -> RatePatterns.sporadic(seconds, 40, seed);
            default -> throw new IllegalArgumentException("--pattern must be bursty, periodic or sporadic, got " + name);
        };
    }

    static RateTrace azureLlmCode() throws IOException {
        try (InputStream in = CoScalingBench.class.getResourceAsStream("/coscaling/azure-llm-code-rps.csv")) {
            if (in == null) {
                throw new IOException("coscaling/azure-llm-code-rps.csv is not on the classpath");
            }
            RateTrace t = RateTrace.readCsv(new InputStreamReader(in, StandardCharsets.UTF_8), "azure-llm-code");
            return new RateTrace("azure-llm-code", t.rps());
        }
    }

    /**
     * The function every trace of the bench is, and of {@code simulate coscaling} without {@code --profile}:
     * {@link FunctionProfiles#bench}.
     */
    public static FunctionProfile profile() {
        return FunctionProfiles.bench();
    }

    /**
     * The bench: every policy on {@link #traces()}, the figures and report.md into {@code report}; with {@code training}
     * (null for none) beside every instance.
     */
    public static void run(PrintWriter out, Path report, TrainingNeighbour training) throws IOException {
        run(out, traces(), COMPARED, null, report, training);
        out.flush();
    }

    /**
     * Runs {@code policyNames} on each trace, one {@link #profile()} function each, printing a table and a BENCH
     * line per trace (the BENCH line last); with {@code series}, also every second of every run as CSV
     * ({@code trace,policy,second,rps,instances,gpu_share,late}); with {@code report}, the figures and report.md
     * of {@link CoScalingReport} there once every trace has run (where is said before the first trace, so that
     * each trace's output still ends with its BENCH line).
     */
    public static List<CoScalingReport.TraceRuns> run(PrintWriter out, List<RateTrace> traces, List<String> policyNames,
            Writer series, Path report) throws IOException {
        return run(out, traces, policyNames, series, report, null);
    }

    /**
     * As {@link #run(PrintWriter, List, List, Writer, Path)}, with {@code training} (null for none) beside every
     * instance: Dilu's vertical room is what the worker's guarantee leaves, and each policy's table row adds the
     * worker's mean share of its GPU ({@link TrainingNeighbour}).
     */
    public static List<CoScalingReport.TraceRuns> run(PrintWriter out, List<RateTrace> traces, List<String> policyNames,
            Writer series, Path report, TrainingNeighbour training) throws IOException {
        return run(out, traces, policyNames, series, report, training, profile());
    }

    /** As {@link #run(PrintWriter, List, List, Writer, Path, TrainingNeighbour)}, every trace being {@code profile}. */
    public static List<CoScalingReport.TraceRuns> run(PrintWriter out, List<RateTrace> traces, List<String> policyNames,
            Writer series, Path report, TrainingNeighbour training, FunctionProfile profile) throws IOException {
        for (String name : policyNames) {
            if (!policies().containsKey(name)) {
                throw new IllegalArgumentException("policy " + name + " is not one of " + policies().keySet());
            }
        }
        if (series != null) {
            series.write("trace,policy,second,rps,instances,gpu_share,late\n");
        }
        out.printf(Locale.ROOT, "co-scaling model (not a measurement): one function, %s: %s%n", profile.name(), profile.summary());
        if (training != null) {
            out.printf(Locale.ROOT, "beside each instance a best-effort training worker at %.0f%% SM (limit %.0f%%); Dilu's "
                    + "instances keep %.0f%% of their way to the limit%n", 100 * training.request(), 100 * training.limit(),
                    100 * training.room(profile));
        }
        if (report != null) {
            out.println("figures and report: " + report.resolve(CoScalingReport.REPORT) + " (written after the last trace)");
        }
        List<CoScalingReport.TraceRuns> runs = new ArrayList<>();
        for (RateTrace trace : traces) {
            out.printf(Locale.ROOT, "%n%s: %d s, %.0f requests, mean %.1f rps, peak %.1f rps%n", trace.name(), trace.seconds(),
                    trace.total(), trace.total() / trace.seconds(), Arrays.stream(trace.rps()).max().orElse(0));
            Map<String, CoScalingSimulation.Result> results = new LinkedHashMap<>();
            for (String name : policyNames) {
                CoScalingPolicy policy = training == null ? policies().get(name).apply(profile)
                        : name.equals("dilu") ? DiluPolicy.withRoom(profile, training.room(profile))
                        : name.equals("dilu-paper") ? DiluPolicy.paper(profile, training.room(profile))
                        : policies().get(name).apply(profile);
                CoScalingSimulation.Result r = CoScalingSimulation.run(trace, profile, policy);
                results.put(name, r);
                if (series != null) {
                    for (int t = 0; t < trace.seconds(); t++) {
                        series.write(String.format(Locale.ROOT, "%s,%s,%d,%s,%d,%.4f,%.3f%n", trace.name(), name, t,
                                trace.rate(t), r.instances()[t], r.share()[t], r.late()[t]));
                    }
                }
            }
            out.printf(Locale.ROOT, "  %-15s %11s %6s %5s %8s %9s %10s %10s  %s%n", "", "cold starts", "", "wakes",
                    "SVR", "SM GPU-s", "mem GiB-s", "DRF GPU-s", "instances");
            out.printf(Locale.ROOT, "  %-15s %5s %5s %5s %5s %8s %9s %10s %10s  %s%n", "", "out", "wake", "all", "", "", "", "",
                    "", "peak mean");
            results.forEach((name, r) -> {
                double beside = training == null ? Double.NaN : training.meanShareBeside(r);
                CoScalingSimulation.Books b = r.books();
                out.printf(Locale.ROOT, "  %-15s %5d %5d %5d %5d %7.2f%% %9.1f %10.0f %10.1f  %4d %4.2f%s%n", name,
                        b.scaleOutColdStarts(), b.failedWakeColdStarts(), r.coldStarts(), b.wakes(), 100 * r.violationRate(),
                        r.gpuSeconds(), b.memoryGibSeconds(), b.dominantGpuSeconds(), r.peakInstances(), r.meanInstances(),
                        training == null ? "" : Double.isNaN(beside) ? "  training: not beside"
                                : String.format(Locale.ROOT, "  training beside: %.1f%% of its GPU", 100 * beside));
            });
            out.printf(Locale.ROOT, "  (cold starts: out = asked by a scale-out after t=0, wake = a wake that found its GPU "
                    + "full, all = every start, the deployment at t=0 included; a parked instance holds no SM, only its "
                    + "memory)%n");
            StringBuilder bench = new StringBuilder("BENCH coscaling model=fluid trace=").append(trace.name());
            for (String name : policyNames) {
                CoScalingSimulation.Result r = results.get(name);
                CoScalingSimulation.Books b = r.books();
                bench.append(String.format(Locale.ROOT, " %s_cold_starts=%d %s_svr=%.2f %s_gpu_s=%.1f", name, r.coldStarts(), name,
                        100 * r.violationRate(), name, r.gpuSeconds()));
                bench.append(String.format(Locale.ROOT, " %s_scale_out_cold_starts=%d %s_failed_wake_cold_starts=%d %s_wakes=%d"
                        + " %s_wake_s=%.2f %s_mem_gib_s=%.0f %s_drf_gpu_s=%.1f", name, b.scaleOutColdStarts(), name,
                        b.failedWakeColdStarts(), name, b.wakes(), name, b.meanWakeSeconds(), name, b.memoryGibSeconds(), name,
                        b.dominantGpuSeconds()));
            }
            out.println(bench);
            runs.add(new CoScalingReport.TraceRuns(trace, List.copyOf(results.values())));
        }
        if (report != null) {
            CoScalingReport.write(report, profile, runs);
        }
        return List.copyOf(runs);
    }
}
