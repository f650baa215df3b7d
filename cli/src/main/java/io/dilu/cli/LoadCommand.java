package io.dilu.cli;

import io.dilu.loadgen.LoadGenerator;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.LoadSettings;
import io.dilu.loadgen.Outcome;
import io.dilu.loadgen.Progress;
import io.dilu.loadgen.RateTrace;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./dilu load}: a rate trace replayed against inference servers, every request's latency recorded. */
@Command(name = "load", mixinStandardHelpOptions = true, sortOptions = false, description = {
        "Replay a request-rate trace against inference servers; record every request's latency.",
        "Requests are POST URL/infer (as emu-serve answers), sent open loop: each second's requests at Poisson-spaced "
                + "instants whether or not earlier ones were answered, each to the target with the fewest requests in "
                + "flight. Prints progress every 10 s, then a summary and a BENCH line; latency counts from when a "
                + "request was due to its answer (docs/coscaling.md)."})
final class LoadCommand implements Callable<Integer> {

    static final double MAX_SECONDS = LoadSettings.MAX_TIMEOUT.toSeconds();
    static final long PROGRESS_SECONDS = 10;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    static final class TraceFile {
        @Option(names = "--trace", required = true, paramLabel = "FILE",
                description = "The rate per second: CSV with header second,rps and one row per second from 0")
        Path rates;

        @Option(names = "--requests", required = true, paramLabel = "FILE", description = "Instead of --trace: a "
                + "per-request trace whose first column is the time (yyyy-MM-dd HH:mm:ss.fffffff, as the Azure LLM "
                + "trace), counted per second")
        Path requests;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    TraceFile trace;

    @Option(names = "--target", required = true, paramLabel = "URL",
            description = "An inference server, e.g. http://10.0.0.5:8080 (repeatable; requests go to URL/infer)")
    List<String> targets = new ArrayList<>();

    @Option(names = "--slo", paramLabel = "SECONDS", description = "Latency objective in seconds, in 0.001..3600: "
            + "adds the SLO violation rate (svr; failures count as violations) to the summary (default: none)")
    Double slo;

    @Option(names = "--out", paramLabel = "FILE",
            description = "Write every request as CSV " + LoadResult.CSV_HEADER + " to FILE (default: none)")
    Path out;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "42",
            description = "Seed of the arrival instants (default ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "" + LoadSettings.DEFAULT_TIMEOUT_SECONDS,
            description = "Give a request up this long after it was due, waiting time included; in 0.001..3600 "
                    + "(default ${DEFAULT-VALUE})")
    double timeout;

    @Option(names = "--max-outstanding", paramLabel = "N", defaultValue = "" + LoadSettings.DEFAULT_MAX_OUTSTANDING,
            description = "Most requests in flight at once; more wait in the buffer; in 1.." + LoadSettings.MAX_OUTSTANDING
                    + " (default ${DEFAULT-VALUE})")
    int maxOutstanding;

    @Option(names = "--max-buffered", paramLabel = "N", defaultValue = "" + LoadSettings.DEFAULT_MAX_BUFFERED,
            description = "Most requests waiting for a target or for room in flight; more fail as overflow; in 0.."
                    + LoadSettings.MAX_BUFFERED + " (default ${DEFAULT-VALUE})")
    int maxBuffered;

    @Override
    public Integer call() throws IOException, InterruptedException {
        PrintWriter stdout = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String refused = refusedOption();
        if (refused != null) {
            err.println(refused);
            return 2;
        }
        List<URI> uris = targets.stream().map(URI::create).toList();
        RateTrace rates;
        try {
            rates = readTrace();
        } catch (RateTrace.InvalidTraceException e) {
            err.println(e.getMessage());
            return 2;
        } catch (NoSuchFileException e) {
            err.println(e.getMessage() + ": no such file");
            return 2;
        }
        LoadSettings settings = new LoadSettings(Duration.ofNanos(Math.round(timeout * 1e9)), maxOutstanding, maxBuffered);
        stdout.printf(Locale.ROOT, "load: %s, %d s, %d requests to %d target(s), seed %d, timeout %.3f s%n", rates.name(),
                rates.seconds(), LoadGenerator.requests(rates), uris.size(), seed, timeout);
        stdout.flush();
        // opened first: a file that cannot be written should fail the command before the run, not after it
        Writer csv;
        try {
            csv = out == null ? null : Files.newBufferedWriter(out, StandardCharsets.UTF_8);
        } catch (IOException e) {
            err.println("--out " + out + " cannot be written: " + e.getMessage());
            return 2;
        }
        try (csv) {
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            LoadResult result;
            try {
                result = run(new LoadGenerator(rates, seed, () -> uris, http, settings, System::nanoTime).start(), stdout);
            } finally {
                // requests the run gave up may still be open in the client: close them rather than wait
                http.shutdownNow();
            }
            summary(stdout, result);
            if (csv != null) {
                result.writeCsv(csv);
                stdout.println("load: wrote " + result.count() + " requests to " + out);
            }
        }
        return 0;
    }

    /** The message naming the first option out of range, or null. */
    private String refusedOption() {
        for (String t : targets) {
            String problem = checkTarget(t);
            if (problem != null) {
                return "--target " + t + " is not allowed: " + problem;
            }
        }
        if (slo != null && !(slo >= 0.001 && slo <= MAX_SECONDS)) {
            return "--slo must be in 0.001..3600 seconds, got " + slo;
        }
        if (!(timeout >= 0.001 && timeout <= MAX_SECONDS)) {
            return "--timeout must be in 0.001..3600 seconds, got " + timeout;
        }
        if (maxOutstanding < 1 || maxOutstanding > LoadSettings.MAX_OUTSTANDING) {
            return "--max-outstanding must be in 1.." + LoadSettings.MAX_OUTSTANDING + ", got " + maxOutstanding;
        }
        if (maxBuffered < 0 || maxBuffered > LoadSettings.MAX_BUFFERED) {
            return "--max-buffered must be in 0.." + LoadSettings.MAX_BUFFERED + ", got " + maxBuffered;
        }
        return null;
    }

    private static String checkTarget(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            return e.getMessage();
        }
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
            return "must be an http:// or https:// URL";
        }
        if (uri.getHost() == null) {
            return "must name a host";
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            return "must have no query or fragment (requests go to URL/infer)";
        }
        return null;
    }

    private RateTrace readTrace() throws IOException {
        Path file = trace.rates != null ? trace.rates : trace.requests;
        try (var in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return trace.rates != null ? RateTrace.readCsv(in, file.getFileName().toString())
                    : RateTrace.fromRequests(in, file.getFileName().toString());
        }
    }

    private static LoadResult run(LoadGenerator load, PrintWriter stdout) throws IOException, InterruptedException {
        try {
            while (true) {
                try {
                    return load.finished().get(PROGRESS_SECONDS, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    Progress p = load.progress();
                    stdout.printf(Locale.ROOT, "load: %.0f s: %d due, %d sent, %d answered, %d failed, %d waiting, %d in "
                                    + "flight; p95 %.1f ms so far%n", p.elapsedSeconds(), p.due(), p.sent(), p.answered(),
                            p.failed(), p.buffered(), p.inFlight(), 1000 * p.p95Seconds());
                    stdout.flush();
                }
            }
        } catch (ExecutionException e) {
            throw new IOException("the load run broke: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            load.stop();
            throw e;
        }
    }

    private void summary(PrintWriter stdout, LoadResult r) {
        double p50 = 1000 * r.latencyPercentile(0.50);
        double p95 = 1000 * r.latencyPercentile(0.95);
        double p99 = 1000 * r.latencyPercentile(0.99);
        stdout.printf(Locale.ROOT, "load: %d requests, %d answered with 2xx, %d failed (timeout %d, refused %d, "
                        + "error %d, overflow %d, unanswered %d, other status %d)%n", r.count(), r.count() - r.failures(),
                r.failures(), r.failures(Outcome.Failure.TIMEOUT), r.failures(Outcome.Failure.REFUSED),
                r.failures(Outcome.Failure.ERROR), r.failures(Outcome.Failure.OVERFLOW),
                r.failures(Outcome.Failure.UNANSWERED), r.errorStatuses());
        stdout.printf(Locale.ROOT, "load: latency from due to a 2xx answer: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms%n",
                p50, p95, p99);
        String svr = "";
        if (slo != null) {
            double rate = 100 * r.sloViolationRate(slo);
            stdout.printf(Locale.ROOT, "load: SLO %.3f s: %.2f%% of requests violated it (failures included)%n", slo, rate);
            svr = String.format(Locale.ROOT, " svr=%.2f", rate);
        }
        stdout.printf(Locale.ROOT, "BENCH load trace=%s requests=%d failures=%d p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f%s%n",
                r.trace(), r.count(), r.failures(), p50, p95, p99, svr);
        stdout.flush();
    }
}
