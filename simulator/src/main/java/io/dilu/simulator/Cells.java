package io.dilu.simulator;

import java.util.List;

/** Reading the cells of one CSV row, each problem as one line naming the field and its allowed range. */
public final class Cells {

    private Cells() {}

    /** What a reader does with one data row: its 1-based line number and its cells. */
    public interface Row {
        void read(int number, String[] cells);
    }

    /** Every row after the header, skipping blank lines and {@code #} comments, split on commas. */
    public static void rows(java.io.BufferedReader in, Row row) throws java.io.IOException {
        String line;
        int number = 1;
        while ((line = in.readLine()) != null) {
            number++;
            if (!line.isBlank() && !line.startsWith("#")) {
                row.read(number, line.split(",", -1));
            }
        }
    }

    /** An instance from its type, GPU count, shares and memory cells, or null with the problems added. */
    static SimInstance instance(String id, String function, String type, String gpus, String request, String limit,
            String memoryGb, String prefix, List<String> problems) {
        int before = problems.size();
        InstanceType kind = InstanceType.fromLabel(type.strip()).orElse(null);
        if (kind == null) {
            problems.add(prefix + "type='" + type.strip() + "' is not allowed: must be one of inference, llm-inference, training");
        }
        int count = (int) number(gpus, "gpus", 1, 64, true, prefix, problems);
        double req = number(request, "sm_request", 0.001, 1.0, false, prefix, problems);
        double lim = number(limit, "sm_limit", Double.isNaN(req) ? 0.001 : req, 1.0, false, prefix, problems);
        double memory = number(memoryGb, "memory_gb", 0.001, 1024, false, prefix, problems);
        if (problems.size() > before) {
            return null;
        }
        return new SimInstance(id, function, kind, count, req, lim, Math.max(1, Math.round(memory * 1024)));
    }

    static double number(String cell, String field, double low, double high, boolean integer, String prefix,
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
