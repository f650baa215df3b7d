package io.dilu.cli;

import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import io.dilu.core.placement.PlacementParameters;
import io.dilu.core.placement.PlacementPolicy;
import io.dilu.core.placement.StaticQuotaPlacement;
import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.ClusterShape;
import io.dilu.simulator.EventCsv;
import io.dilu.simulator.EventGenerator;
import io.dilu.simulator.EventPlot;
import io.dilu.simulator.EventReplay;
import io.dilu.simulator.EventSimulation;
import io.dilu.simulator.InstanceCsv;
import io.dilu.simulator.OpenbBench;
import io.dilu.simulator.OpenbTrace;
import io.dilu.simulator.PaperMix;
import io.dilu.simulator.PlacementSimulation;
import io.dilu.simulator.SimInstance;
import io.dilu.simulator.coscaling.CoScalingBench;
import io.dilu.simulator.coscaling.CoScalingFleetBench;
import io.dilu.simulator.coscaling.FleetFunctions;
import io.dilu.simulator.coscaling.FunctionProfile;
import io.dilu.simulator.coscaling.FunctionProfiles;
import io.dilu.simulator.coscaling.TrainingNeighbour;
import io.dilu.trials.ProfileFile;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The {@code ./dilu simulate}, {@code ./dilu bench}, {@code ./dilu load} and {@code ./dilu profile} commands. */
@Command(name = "dilu", mixinStandardHelpOptions = true, subcommands = {
        Main.Simulate.class, Main.Bench.class, LoadCommand.class, ProfileCommand.class}, description = "Dilu for Knative: simulation, benchmarks and load.")
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    static int execute(String... args) {
        return new CommandLine(new Main()).execute(args);
    }

    @Command(name = "simulate", mixinStandardHelpOptions = true, subcommands = Simulate.Coscaling.class,
            description = "Place a workload with Dilu and with the Exclusive and static-limit baselines; print the GPUs each needs.")
    static final class Simulate implements Callable<Integer> {

        @Command(name = "coscaling", mixinStandardHelpOptions = true, description = {
                "Model how Dilu, Knative KPA, FaST-GS+, INFless+ and Exclusive scale one function on request-rate traces "
                        + "(a model, not a measurement; docs/coscaling.md): cold starts, SLO violation rate, GPU-seconds.",
                "Each trace is one function (--profile; by default BERT-Large as the profiler found it on the emulated GPU, "
                        + "as ./dilu bench coscaling). Without --trace, --requests or --pattern: the three patterns and the "
                        + "Azure LLM trace."})
        static final class Coscaling implements Callable<Integer> {

            @CommandLine.Spec
            CommandLine.Model.CommandSpec spec;

            @Option(names = "--trace", paramLabel = "FILE", description = "A function's rate per second: CSV with header "
                    + "second,rps and one row per second from 0 (repeatable)")
            List<Path> traces = new java.util.ArrayList<>();

            @Option(names = "--requests", paramLabel = "FILE", description = "A per-request trace whose first column is the "
                    + "time (yyyy-MM-dd HH:mm:ss.fffffff, as the Azure LLM trace), counted per second (repeatable)")
            List<Path> requests = new java.util.ArrayList<>();

            @Option(names = "--pattern", paramLabel = "NAME", description = "A seeded pattern: bursty, periodic or sporadic "
                    + "(repeatable; see --seconds, --seed)")
            List<String> patterns = new java.util.ArrayList<>();

            @Option(names = "--seconds", defaultValue = "3600", description = "Length of a pattern (default ${DEFAULT-VALUE})")
            int seconds;

            @Option(names = "--seed", defaultValue = "42", description = "Seed of the patterns (default ${DEFAULT-VALUE})")
            long seed;

            @Option(names = "--policies", split = ",", paramLabel = "LIST",
                    description = "Policies to run (default: dilu,kpa,fastgs,infless,exclusive; also dilu-paper, the "
                            + "paper's lazy rule without the burst guard)")
            List<String> policies = CoScalingBench.COMPARED;

            @Option(names = "--series", paramLabel = "FILE",
                    description = "Write every second of every run (trace,policy,second,rps,instances,gpu_share,late) to FILE")
            Path series;

            @Option(names = "--training", paramLabel = "PERCENT", description = "A best-effort training worker with this SM "
                    + "request (1..100, limit twice that up to 100) beside every instance: what it gets of its GPU under each "
                    + "policy, and the room it leaves Dilu's vertical scaling (default: none)")
            Integer training;

            @Option(names = "--profile", paramLabel = "FILE|NAME", defaultValue = FunctionProfiles.BENCH, description = "The "
                    + "function: a GpuFunctionProfile (YAML or JSON, as kubectl get gfp NAME -o yaml prints it or ./dilu "
                    + "profile --local --out DIR writes it; settings in its Ready status or its spec), a shipped profile ("
                    + FunctionProfiles.BENCH + ": the emulated model as profiled), or " + FunctionProfiles.MID_SIZE
                    + " (the assumed SLO 200 ms, 50 rps at 20% SM, 80 rps at 40%, 110 rps with a whole GPU) "
                    + "(default ${DEFAULT-VALUE})")
            String profile;

            @Option(names = "--cold-start", paramLabel = "SECONDS", defaultValue = "8", description = "From the decision to "
                    + "start an instance to its serving, 0..3600 s; a profile does not say (default ${DEFAULT-VALUE})")
            int coldStart;

            @Option(names = "--report", paramLabel = "DIR", description = "Write the figures (per trace, request rate, "
                    + "instances, GPU share and late requests per second over time, one line per policy: TRACE.png and "
                    + "TRACE.svg) and report.md (a table per trace, the figures linked) to DIR")
            Path report;

            @Override
            public Integer call() throws IOException {
                PrintWriter err = spec.commandLine().getErr();
                List<RateTrace> list = new java.util.ArrayList<>();
                try {
                    for (Path p : traces) {
                        try (var in = Files.newBufferedReader(p, StandardCharsets.UTF_8)) {
                            list.add(RateTrace.readCsv(in, p.getFileName().toString()));
                        }
                    }
                    for (Path p : requests) {
                        try (var in = Files.newBufferedReader(p, StandardCharsets.UTF_8)) {
                            list.add(RateTrace.fromRequests(in, p.getFileName().toString()));
                        }
                    }
                    if (seconds < 1 || seconds > RateTrace.MAX_SECONDS) {
                        err.println("--seconds must be in 1.." + RateTrace.MAX_SECONDS);
                        return 2;
                    }
                    if (coldStart < 0 || coldStart > 3600) {
                        err.println("--cold-start must be in 0..3600 seconds, got " + coldStart);
                        return 2;
                    }
                    FunctionProfile function = FunctionProfiles.named(profile, coldStart);
                    for (String pattern : patterns) {
                        list.add(CoScalingBench.pattern(pattern, seconds, seed));
                    }
                    if (list.isEmpty()) {
                        list.addAll(CoScalingBench.traces());
                    }
                    if (report != null && Files.exists(report) && !Files.isDirectory(report)) {
                        err.println("--report " + report + " is a file, not a directory");
                        return 2;
                    }
                    try (Writer w = series == null ? null : Files.newBufferedWriter(series, StandardCharsets.UTF_8)) {
                        CoScalingBench.run(spec.commandLine().getOut(), list, policies, w, report,
                                training == null ? null : TrainingNeighbour.ofPercent(training), function);
                    }
                    return 0;
                } catch (RateTrace.InvalidTraceException | ProfileFile.InvalidProfileException | IllegalArgumentException e) {
                    err.println(e.getMessage());
                    return 2;
                } catch (java.nio.file.NoSuchFileException e) {
                    err.println(e.getMessage() + ": no such file");
                    return 2;
                }
            }
        }

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Option(names = "--instances", paramLabel = "FILE",
                description = "CSV of your own instances (header: " + InstanceCsv.HEADER + "[,function]); default: the paper's mix")
        Path instances;

        @Option(names = "--events", paramLabel = "FILE", description = "Replay an event list (header: " + EventCsv.HEADER
                + "; action start|stop) with Dilu and the baselines; reports active GPUs over time and the peak")
        Path events;

        @Option(names = "--generate-events", paramLabel = "FILE", description = "Write the paper's mix as a seeded "
                + "event list (Poisson arrivals, exponential lifetimes by type; see --count, --seed) and exit")
        Path generateEvents;

        @Option(names = "--series", paramLabel = "FILE", description = "With --events: write active GPUs over time "
                + "(time_s,policy,active_gpus) to FILE")
        Path series;

        @Option(names = "--plot", paramLabel = "FILE.png", description = "With --events: draw active GPUs over time, "
                + "one line per policy, to FILE.png and FILE.svg")
        Path plot;

        @Option(names = "--count", defaultValue = "3200", description = "Instances of the paper's mix (default ${DEFAULT-VALUE})")
        int count;

        @Option(names = "--seed", defaultValue = "20250330", description = "Seed of the paper's mix (default ${DEFAULT-VALUE})")
        long seed;

        @Option(names = "--gpus-per-node", defaultValue = "4", description = "GPUs per node (default ${DEFAULT-VALUE})")
        int gpusPerNode;

        @Option(names = "--gpu-memory-gb", defaultValue = "40", description = "Memory per GPU in GB (default ${DEFAULT-VALUE})")
        int gpuMemoryGb;

        @Option(names = "--openb", paramLabel = "FILE", description = "Place a pod list in the openb format (header "
                + "with name,num_gpu,gpu_milli and optionally cpu_milli,memory_mib,gpu_spec,creation_time) as Weng et al. "
                + "load a cluster, with Dilu, FGD, Exclusive and best fit; reports the GPU share each allocates")
        Path openb;

        @Option(names = "--nodes", paramLabel = "FILE", description = "With --openb: the node list (header sn,gpu,model and "
                + "optionally cpu_milli,memory_mib); default: the bundled openb_node_list_gpu_node.csv")
        Path openbNodes;

        @Option(names = "--gpu-only", description = "With --openb: model GPUs only (no node CPU or memory, CPU-only pods "
                + "left out)")
        boolean gpuOnly;

        // Their defaults are core's (picocli takes a field's initial value as its option's default).
        @Option(names = "--omega", description = "Most Σ SM request per GPU, Ω (default ${DEFAULT-VALUE})")
        double omega = PlacementParameters.DEFAULTS.omega();

        @Option(names = "--gamma", description = "Most Σ SM limit per GPU, γ (default ${DEFAULT-VALUE})")
        double gamma = PlacementParameters.DEFAULTS.gamma();

        @Override
        public Integer call() throws IOException {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            if (count < 1 || gpusPerNode < 1 || gpusPerNode > 64 || gpuMemoryGb < 1) {
                err.println("--count must be >= 1, --gpus-per-node in 1..64, --gpu-memory-gb >= 1");
                return 2;
            }
            PlacementParameters params;
            try {
                params = PlacementParameters.DEFAULTS.withOmegaGamma(omega, gamma);
            } catch (IllegalArgumentException e) {
                err.println("--omega/--gamma: " + e.getMessage());
                return 2;
            }
            if (openb != null) {
                return OpenbCommand.simulate(out, err, openb, openbNodes, gpuOnly, params);
            }
            if (openbNodes != null || gpuOnly) {
                err.println("--nodes and --gpu-only go with --openb");
                return 2;
            }
            ClusterShape shape = new ClusterShape(gpusPerNode, gpuMemoryGb * 1024L, gpuMemoryGb + "GB");
            if (generateEvents != null) {
                try (Writer w = Files.newBufferedWriter(generateEvents, StandardCharsets.UTF_8)) {
                    EventCsv.write(w, EventGenerator.paperMix(count, seed));
                }
                out.printf("wrote %s: the paper's mix, %d instances, seed %d, as start and stop events%n", generateEvents,
                        count, seed);
                return 0;
            }
            if (plot != null && (events == null || !plot.toString().endsWith(".png"))) {
                err.println("--plot needs --events and a FILE ending in .png (FILE.svg is written beside it), got " + plot);
                return 2;
            }
            if (events != null) {
                List<EventCsv.Event> list = readCsv(events, EventCsv::read, err);
                if (list == null) {
                    return 2;
                }
                Path svg = null;
                if (plot != null) {
                    svg = plot.resolveSibling(plot.getFileName().toString().replaceAll("\\.png$", ".svg"));
                    // Said first, so that the output still ends with the BENCH line.
                    out.println("plot: " + plot + " and " + svg + " (written after the replay)");
                }
                List<EventSimulation.Result> results;
                try (Writer w = series == null ? null : Files.newBufferedWriter(series, StandardCharsets.UTF_8)) {
                    results = EventReplay.run(out, events.toString(), list, shape, params, w);
                }
                if (plot != null) {
                    EventPlot.write(plot, svg, events.getFileName().toString(), results, list.getFirst().timeS(),
                            list.getLast().timeS());
                }
                return 0;
            }
            List<SimInstance> mix;
            String source;
            if (instances != null) {
                mix = readCsv(instances, InstanceCsv::read, err);
                if (mix == null) {
                    return 2;
                }
                source = instances.toString();
            } else {
                mix = PaperMix.generate(count, seed);
                source = "the paper's mix, " + count + " instances, seed " + seed;
            }
            List<NodeInventory> nodes = shape.nodesFor(mix);
            List<InstanceRequest> requests = mix.stream().map(SimInstance::toRequest).toList();
            out.printf("Placing %s on nodes of %d GPUs × %d GB (Ω = %.2f, γ = %.2f)%n%n", source, gpusPerNode,
                    gpuMemoryGb, omega, gamma);
            out.printf("%-14s %8s %6s %7s %8s %8s %10s%n", "policy", "GPUs", "nodes", "placed", "SM frag", "mem frag",
                    "unplaced");
            PlacementSimulation.Result dilu = null;
            for (PlacementPolicy policy : List.of(new ComplementaryPlacement(params), new ExclusivePlacement(),
                    new StaticQuotaPlacement(params))) {
                PlacementSimulation.Result r = PlacementSimulation.run(policy, nodes, requests);
                dilu = dilu == null ? r : dilu;
                out.printf("%-14s %8d %6d %7d %7.1f%% %7.1f%% %10d%n", r.policy(), r.gpus(), r.nodes(), r.placed(),
                        100 * r.smFragmentation(), 100 * r.memoryFragmentation(), r.infeasible());
                r.reasons().forEach(reason -> out.println("    unplaced " + reason));
                if (r != dilu && r.gpus() > 0) {
                    out.printf("    dilu uses %.1f%% fewer GPUs than %s%n", 100.0 * (r.gpus() - dilu.gpus()) / r.gpus(),
                            r.policy());
                }
            }
            return 0;
        }
    }

    /** A CSV reader of the simulator's: every bad row is one problem naming its line. */
    interface CsvReader<T> {
        T read(java.io.Reader source) throws IOException, InstanceCsv.InvalidCsvException;
    }

    /** The file read by {@code reader}, or null after printing why not (each problem, or no such file). */
    static <T> T readCsv(Path file, CsvReader<T> reader, PrintWriter err) throws IOException {
        try (var in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return reader.read(in);
        } catch (InstanceCsv.InvalidCsvException e) {
            err.println(file + ": " + e.problems().size() + " problem(s):");
            e.problems().forEach(p -> err.println("  " + p));
        } catch (java.nio.file.NoSuchFileException e) {
            err.println(file + ": no such file");
        }
        return null;
    }

    @Command(name = "bench", mixinStandardHelpOptions = true, description = "Run a benchmark; each ends with a BENCH line.",
            subcommands = {Bench.Openb.class, Bench.Coscaling.class, Bench.CoscalingFleet.class, Bench.Profiling.class})
    static final class Bench implements Runnable {

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            spec.commandLine().usage(spec.commandLine().getOut());
        }

        @Command(name = "openb", mixinStandardHelpOptions = true, description = {
                "Place Alibaba openb pod lists (the bundled ones, or --trace): GPUs each policy needs (Dilu, Exclusive, "
                        + "best fit), then Weng et al.'s metric with node CPU and memory and the CPU-only pods modelled "
                        + "(Dilu, FGD, best fit); one BENCH openb and one BENCH openb-fgd line per list."})
        static final class Openb implements Callable<Integer> {
            @Option(names = "--trace", paramLabel = "FILE", description = "A pod list in the openb format (header with "
                    + "name,num_gpu,gpu_milli and optionally cpu_milli,memory_mib,gpu_spec,creation_time; repeatable); "
                    + "default: the six bundled lists")
            List<Path> traces = new java.util.ArrayList<>();

            @Option(names = "--nodes", paramLabel = "FILE", description = "The node list (header sn,gpu,model and "
                    + "optionally cpu_milli,memory_mib); default: the bundled openb_node_list_gpu_node.csv")
            Path nodes;

            @Option(names = "--gpu-only", description = "Model GPUs only: no node CPU or memory, CPU-only pods left out")
            boolean gpuOnly;

            @Option(names = "--seeds", defaultValue = "1", paramLabel = "N",
                    description = "Average over N shuffles of each list, seeds 42.. (the authors use 10; default ${DEFAULT-VALUE})")
            int seeds;

            @Option(names = "--smoke", description = "CI's size: the bundled default list alone, one seed")
            boolean smoke;

            @CommandLine.Spec
            CommandLine.Model.CommandSpec spec;

            @Override
            public Integer call() throws IOException {
                try {
                    OpenbBench.run(System.out, smoke ? OpenbBench.Options.SMOKE
                            : new OpenbBench.Options(traces, nodes, gpuOnly, seeds));
                    return 0;
                } catch (OpenbTrace.InvalidTraceException | IllegalArgumentException e) {
                    spec.commandLine().getErr().println(e.getMessage());
                    return 2;
                } catch (java.nio.file.NoSuchFileException e) {
                    spec.commandLine().getErr().println(e.getMessage() + ": no such file");
                    return 2;
                }
            }
        }

        @Command(name = "coscaling", mixinStandardHelpOptions = true,
                description = "Model Dilu, Knative KPA, FaST-GS+, INFless+ and Exclusive on bursty, periodic and sporadic "
                        + "request patterns and the Azure LLM trace: cold starts, SLO violations, GPU-seconds; figures and "
                        + "report.md in --report.")
        static final class Coscaling implements Callable<Integer> {
            @Option(names = "--report", paramLabel = "DIR", defaultValue = "simulator/target/coscaling-report",
                    description = "Where the figures (TRACE.png, TRACE.svg) and report.md go (default ${DEFAULT-VALUE}, "
                            + "from the directory ./dilu runs in: the repository's root)")
            Path report;

            @Option(names = "--smoke", description = "CI's size: the same run (a model of a few seconds)")
            boolean smoke;

            @Option(names = "--training", paramLabel = "PERCENT", description = "A best-effort training worker with this SM "
                    + "request (1..100, limit twice that up to 100) beside every instance (default: none)")
            Integer training;

            @CommandLine.Spec
            CommandLine.Model.CommandSpec spec;

            @Override
            public Integer call() throws IOException {
                CoScalingBench.run(spec.commandLine().getOut(), report,
                        training == null ? null : TrainingNeighbour.ofPercent(training));
                return 0;
            }
        }

        @Command(name = "coscaling-fleet", mixinStandardHelpOptions = true, description = {
                "Model many functions on one GPU pool, each on its own real trace (Azure Functions 2019, ServeGen), each "
                        + "instance placed by Algorithm 1 and scaled by Dilu, Knative KPA, FaST-GS+, INFless+ and Exclusive: "
                        + "GPUs needed, SVR and cold starts per kind of function, failed wakes, parked memory; one BENCH "
                        + "coscaling-fleet line per policy (a model, not a measurement; docs/coscaling.md)."})
        static final class CoscalingFleet implements Callable<Integer> {
            @Option(names = "--seed", defaultValue = "42", description = "Draws the functions, their profiles and their "
                    + "arrivals (default ${DEFAULT-VALUE})")
            long seed;

            @Option(names = "--policies", split = ",", paramLabel = "NAME,…", description = "Default: dilu,kpa,fastgs,"
                    + "infless,exclusive; also dilu-no-parking, dilu-alongside, dilu-paper")
            List<String> policies = new java.util.ArrayList<>(CoScalingBench.COMPARED);

            @Option(names = "--smoke", description = "CI's size: 6 inference and 2 LLM functions over the first hour "
                    + "(the full size: 18 and 6 over 8 hours)")
            boolean smoke;

            @CommandLine.Spec
            CommandLine.Model.CommandSpec spec;

            @Override
            public Integer call() {
                FleetFunctions.Size size = smoke ? FleetFunctions.Size.SMOKE : FleetFunctions.Size.FULL;
                try {
                    CoScalingFleetBench.run(spec.commandLine().getOut(), new FleetFunctions.Size(size.inference(), size.llm(),
                            size.seconds(), seed), policies);
                    return 0;
                } catch (IllegalArgumentException e) {
                    spec.commandLine().getErr().println(e.getMessage());
                    return 2;
                }
            }
        }

        @Command(name = "profiling", mixinStandardHelpOptions = true,
                description = "Profile four emulated inference models by Hybrid Growth Search and by the traversal, and a "
                        + "training job by the binary search, every trial a run on the emulated GPU; one BENCH line per model, "
                        + "with how late the host ran a probe beside its trials.")
        static final class Profiling implements Callable<Integer> {
            /** The model --smoke profiles: the smallest kernels, so the quickest trials. */
            static final String SMOKE_MODEL = "mobilenet-v1";

            @Option(names = "--native", paramLabel = "DIR", description = "The CMake build of hook-native (default ${DEFAULT-VALUE})")
            Path nativeDir = LocalCommand.defaultNativeDir();

            @Option(names = "--smoke", description = "CI's small size: one model (" + SMOKE_MODEL + "), both searches")
            boolean smoke;

            @CommandLine.Spec
            CommandLine.Model.CommandSpec spec;

            @Override
            public Integer call() {
                return LocalCommand.run(spec.commandLine().getOut(), spec.commandLine().getErr(), nativeDir,
                        smoke ? List.of(SMOKE_MODEL) : List.of(), null);
            }
        }
    }
}
