package io.dilu.cli;

import io.dilu.core.profiling.InferenceSearch;
import io.dilu.core.profiling.Measurement;
import io.dilu.core.profiling.Trial;
import io.dilu.simulator.Cells;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A sweep someone already measured, replayed as trials: CSV with the header
 * {@code batch_size,sm_percent,latency_s,throughput_rps} and one row per measured setting (latency of one
 * batch in seconds). A search that asks for a setting the table lacks gets a failed trial (infinite latency,
 * so it does not meet any SLO): the sweep did not measure it, and a real profiler would have had to run it,
 * so it still counts as a trial.
 *
 * @param name what the BENCH line calls the table (the file name without {@code .csv})
 * @param rows the measured settings in file order
 */
public record ProfileTable(String name, List<Row> rows) implements Trial {

    static final String HEADER = "batch_size,sm_percent,latency_s,throughput_rps";
    /** The largest batch a row may have. */
    static final int MAX_BATCH = 65_536;

    /** One measured setting: latency of one batch in seconds, throughput in requests per second. */
    public record Row(int batchSize, int smPercent, double latencySeconds, double throughputRps) {}

    public ProfileTable {
        rows = List.copyOf(rows);
    }

    /** A malformed table; the message has one {@code FILE:LINE: field must be …} line per problem. */
    public static final class InvalidTableException extends Exception {
        InvalidTableException(List<String> problems) {
            super(String.join("\n", problems));
        }
    }

    public static ProfileTable read(Reader source, String file) throws IOException, InvalidTableException {
        BufferedReader in = new BufferedReader(source);
        String header = in.readLine();
        if (header == null || !header.strip().toLowerCase(Locale.ROOT).replace(" ", "").equals(HEADER)) {
            throw new InvalidTableException(List.of(file + ":1: header must be " + HEADER + ", got '"
                    + (header == null ? "" : header.strip()) + "'"));
        }
        List<String> problems = new ArrayList<>();
        Map<Long, Integer> lineOf = new LinkedHashMap<>();
        List<Row> rows = new ArrayList<>();
        Cells.rows(in, (number, cells) -> {
            String at = file + ":" + number + ": ";
            if (cells.length != 4) {
                problems.add(at + "row must have 4 columns (" + HEADER + "), got " + cells.length);
                return;
            }
            int before = problems.size();
            double batch = field(cells[0], "batch_size", 1, MAX_BATCH, true, at, problems);
            double sm = field(cells[1], "sm_percent", 1, 100, true, at, problems);
            double latency = field(cells[2], "latency_s", Double.MIN_VALUE, Double.MAX_VALUE, false, at, problems);
            double rps = field(cells[3], "throughput_rps", 0, Double.MAX_VALUE, false, at, problems);
            if (problems.size() > before) {
                return;
            }
            Integer first = lineOf.putIfAbsent(key((int) sm, (int) batch), number);
            if (first != null) {
                problems.add(at + "batch_size,sm_percent must be unique: " + (int) batch + "," + (int) sm
                        + " is already on line " + first);
                return;
            }
            rows.add(new Row((int) batch, (int) sm, latency, rps));
        });
        if (problems.isEmpty() && rows.isEmpty()) {
            problems.add(file + ":1: rows must be at least one after the header, got none");
        }
        if (!problems.isEmpty()) {
            throw new InvalidTableException(problems);
        }
        String name = file.endsWith(".csv") ? file.substring(0, file.length() - 4) : file;
        return new ProfileTable(name, rows);
    }

    private static double field(String cell, String field, double low, double high, boolean integer, String at,
            List<String> problems) {
        String text = cell.strip();
        double value;
        try {
            value = integer ? Integer.parseInt(text) : Double.parseDouble(text);
        } catch (NumberFormatException e) {
            problems.add(at + field + " must be " + (integer ? "an integer" : "a number") + ", got '" + text + "'");
            return Double.NaN;
        }
        if (!(value >= low && value <= high)) { // NaN and infinities fail here
            problems.add(at + field + " must be " + (integer ? "in " + (int) low + ".." + (int) high
                    : "a finite number " + (low > 0 ? "> 0" : ">= 0")) + ", got " + text);
            return Double.NaN;
        }
        return value;
    }

    private static long key(int sm, int batch) {
        return ((long) sm << 32) | batch;
    }

    /** The row measured at this setting, if the sweep measured it. */
    public Optional<Row> at(int smPercent, int batchSize) {
        return rows.stream().filter(r -> r.smPercent() == smPercent && r.batchSize() == batchSize).findFirst();
    }

    @Override
    public Measurement run(int smPercent, int batchSize) {
        return at(smPercent, batchSize)
                .map(r -> new Measurement(r.latencySeconds() * 1000, r.throughputRps()))
                .orElse(new Measurement(Double.POSITIVE_INFINITY, 0));
    }

    /** The row with the best throughput efficacy among those whose batch executes within SLO/2. */
    public Optional<Row> best(double sloSeconds) {
        Row best = null;
        for (Row r : rows) {
            if (r.latencySeconds() <= sloSeconds / 2 && (best == null || efficacy(r) > efficacy(best))) {
                best = r;
            }
        }
        return Optional.ofNullable(best);
    }

    static double efficacy(Row r) {
        return InferenceSearch.efficacy(r.batchSize(), r.latencySeconds() * 1000, r.smPercent());
    }
}
