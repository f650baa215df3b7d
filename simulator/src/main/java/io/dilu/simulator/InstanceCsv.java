package io.dilu.simulator;

import java.io.IOException;
import java.io.Reader;
import java.io.BufferedReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads an operator's own instance list: CSV with the header
 * {@code type,gpus,sm_request,sm_limit,memory_gb} (an optional last column {@code function} groups
 * instances for workload affinity; without it every row is its own function), one instance per row in
 * arrival order, shares as fractions of a GPU and memory in GB per GPU. Every bad row is reported with its
 * line number; one bad row rejects the file.
 */
public final class InstanceCsv {

    static final String HEADER = "type,gpus,sm_request,sm_limit,memory_gb";

    /** The rows could not all be read; {@link #problems()} has one line per bad field. */
    public static final class InvalidCsvException extends Exception {
        private final List<String> problems;

        InvalidCsvException(List<String> problems) {
            super(String.join("\n", problems));
            this.problems = List.copyOf(problems);
        }

        public List<String> problems() {
            return problems;
        }
    }

    private InstanceCsv() {}

    public static List<SimInstance> read(Reader source) throws IOException, InvalidCsvException {
        BufferedReader in = new BufferedReader(source);
        List<String> problems = new ArrayList<>();
        String header = in.readLine();
        if (header == null) {
            throw new InvalidCsvException(List.of("line 1: empty file, expected the header " + HEADER));
        }
        String normalized = header.strip().toLowerCase(Locale.ROOT).replace(" ", "");
        boolean withFunction = normalized.equals(HEADER + ",function");
        if (!withFunction && !normalized.equals(HEADER)) {
            throw new InvalidCsvException(List.of("line 1: header is '" + header.strip() + "', expected " + HEADER
                    + " (optionally followed by ,function)"));
        }
        List<SimInstance> out = new ArrayList<>();
        String line;
        int number = 1;
        while ((line = in.readLine()) != null) {
            number++;
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] cells = line.split(",", -1);
            int expected = withFunction ? 6 : 5;
            if (cells.length != expected) {
                problems.add("line " + number + ": " + cells.length + " columns, expected " + expected);
                continue;
            }
            List<String> rowProblems = new ArrayList<>();
            String prefix = "line " + number + ": ";
            InstanceType type = InstanceType.fromLabel(cells[0].strip()).orElse(null);
            if (type == null) {
                rowProblems.add(prefix + "type='" + cells[0].strip() + "' is not allowed: must be one of inference, llm-inference, training");
            }
            int gpus = (int) number(cells[1], "gpus", 1, 64, true, prefix, rowProblems);
            double request = number(cells[2], "sm_request", 0.001, 1.0, false, prefix, rowProblems);
            double limitLow = Double.isNaN(request) ? 0.001 : request;
            double limit = number(cells[3], "sm_limit", limitLow, 1.0, false, prefix, rowProblems);
            double memoryGb = number(cells[4], "memory_gb", 0.001, 1024, false, prefix, rowProblems);
            String function = withFunction && !cells[5].isBlank() ? cells[5].strip() : "row-" + number;
            if (rowProblems.isEmpty()) {
                out.add(new SimInstance("line" + number, function, type, gpus, request, limit,
                        Math.max(1, Math.round(memoryGb * 1024))));
            }
            problems.addAll(rowProblems);
        }
        if (!problems.isEmpty()) {
            throw new InvalidCsvException(problems);
        }
        if (out.isEmpty()) {
            throw new InvalidCsvException(List.of("no instances: the file has a header and no rows"));
        }
        return out;
    }

    private static double number(String cell, String field, double low, double high, boolean integer, String prefix,
            List<String> problems) {
        String text = cell.strip();
        double value;
        try {
            value = integer ? Integer.parseInt(text) : Double.parseDouble(text);
        } catch (NumberFormatException e) {
            problems.add(prefix + field + "='" + text + "' is not " + (integer ? "an integer" : "a number"));
            return Double.NaN;
        }
        if (!(value >= low && value <= high)) {
            problems.add(prefix + field + "=" + text + " is not allowed: must be in " + format(low, integer) + ".."
                    + format(high, integer) + ("sm_limit".equals(field) ? " (sm_request..1)" : ""));
            return Double.NaN;
        }
        return value;
    }

    private static String format(double v, boolean integer) {
        return integer ? Long.toString((long) v) : Double.toString(v);
    }
}
