package io.dilu.simulator;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
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

    public static final String HEADER = "type,gpus,sm_request,sm_limit,memory_gb";

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
        int expected = withFunction ? 6 : 5;
        Cells.rows(in, (number, cells) -> {
            if (cells.length != expected) {
                problems.add("line " + number + ": " + cells.length + " columns, expected " + expected);
                return;
            }
            String function = withFunction && !cells[5].isBlank() ? cells[5].strip() : "row-" + number;
            SimInstance instance = Cells.instance("line" + number, function, cells[0], cells[1], cells[2], cells[3],
                    cells[4], "line " + number + ": ", problems);
            if (instance != null) {
                out.add(instance);
            }
        });
        if (!problems.isEmpty()) {
            throw new InvalidCsvException(problems);
        }
        if (out.isEmpty()) {
            throw new InvalidCsvException(List.of("no instances: the file has a header and no rows"));
        }
        return out;
    }
}
