package io.dilu.core.profiling;

import java.util.HashMap;
import java.util.Map;

/**
 * What a trial's workload says it measured: one line {@code DILU_TRIAL latency_s=L throughput_rps=T memory_mib=M}
 * written to the file named by {@link #RESULT_ENV} (on Kubernetes the container's termination message, which the
 * kubelet copies into the pod's status). The line comes from a tenant's container, so it is read as hostile: the
 * text is bounded, every field is checked against its range, and a bad report fails the trial that wrote it,
 * naming the field.
 *
 * @param latencySeconds time of one batch (inference) or one iteration (training)
 * @param throughput requests per second (inference) or iterations per second (training)
 * @param memoryMib the workload's peak GPU memory, MiB; 0 when it did not say
 */
public record TrialReport(double latencySeconds, double throughput, long memoryMib) {

    /** The environment variable naming the file a trial writes its report line to. */
    public static final String RESULT_ENV = "DILU_TRIAL_RESULT";
    /** The environment variable carrying the batch size, in trials and in served instances alike. */
    public static final String BATCH_SIZE_ENV = "DILU_BATCH_SIZE";
    /** The report line's first word. */
    public static final String PREFIX = "DILU_TRIAL";
    /** Longest text read: the kubelet keeps at most 4 KiB of a termination message. */
    public static final int MAX_CHARS = 4096;
    static final double MAX_LATENCY_S = 3600;
    /** The most requests (iterations) per second a report may give, and so a profile may hold. */
    public static final double MAX_THROUGHPUT = 10_000_000;
    static final long MAX_MEMORY_MIB = 16L << 20;

    public TrialReport {
        check("latency_s", latencySeconds, Double.MIN_VALUE, MAX_LATENCY_S, "a number in (0, 3600]");
        check("throughput_rps", throughput, 0, MAX_THROUGHPUT, "a number in 0..1e7");
        if (memoryMib < 0 || memoryMib > MAX_MEMORY_MIB) {
            throw new IllegalArgumentException("memory_mib must be an integer in 0.." + MAX_MEMORY_MIB + ", got " + memoryMib);
        }
    }

    /** The measurement the searches compare. */
    public Measurement measurement() {
        return new Measurement(latencySeconds * 1000, throughput);
    }

    /** The line a workload writes. */
    public String line() {
        return PREFIX + " latency_s=" + latencySeconds + " throughput_rps=" + throughput + " memory_mib=" + memoryMib;
    }

    /**
     * The last {@code DILU_TRIAL} line of {@code text}.
     *
     * @throws IllegalArgumentException naming what is wrong: no such line, text over {@value #MAX_CHARS}
     *     characters, a missing, repeated or out-of-range field
     */
    public static TrialReport parse(String text) {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("the trial wrote no report (expected a line '" + PREFIX + " latency_s=… throughput_rps=…')");
        }
        if (text.length() > MAX_CHARS) {
            throw new IllegalArgumentException("the trial's report must be at most " + MAX_CHARS + " characters, got " + text.length());
        }
        String line = null;
        for (String l : text.split("\n")) {
            String t = l.strip();
            if (t.startsWith(PREFIX + " ")) {
                line = t;
            }
        }
        if (line == null) {
            throw new IllegalArgumentException("the trial's report has no line starting with '" + PREFIX + " '");
        }
        Map<String, String> fields = new HashMap<>();
        for (String word : line.substring(PREFIX.length()).trim().split("\\s+")) {
            int eq = word.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("the trial's report has '" + clip(word) + "', not key=value");
            }
            if (fields.put(word.substring(0, eq), word.substring(eq + 1)) != null) {
                throw new IllegalArgumentException("the trial's report repeats " + clip(word.substring(0, eq)));
            }
        }
        double latency = number(fields, "latency_s", "a number in (0, 3600]");
        double throughput = number(fields, "throughput_rps", "a number in 0..1e7");
        long memory = 0;
        if (fields.containsKey("memory_mib")) {
            try {
                memory = Long.parseLong(fields.get("memory_mib"));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("memory_mib must be an integer in 0.." + MAX_MEMORY_MIB + ", got '" + clip(fields.get("memory_mib")) + "'");
            }
        }
        return new TrialReport(latency, throughput, memory);
    }

    private static double number(Map<String, String> fields, String key, String range) {
        String v = fields.get(key);
        if (v == null) {
            throw new IllegalArgumentException("the trial's report lacks " + key + " (" + range + ")");
        }
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be " + range + ", got '" + clip(v) + "'");
        }
    }

    private static void check(String key, double v, double min, double max, String range) {
        if (!(v >= min && v <= max)) {
            throw new IllegalArgumentException(key + " must be " + range + ", got " + v);
        }
    }

    private static String clip(String s) {
        return quoted(s, 40);
    }

    /**
     * Text a trial's workload or pod wrote, fit to quote in an error or a status: line breaks and tabs become one
     * space, anything else outside printable ASCII a '?', at most {@code maxChars} characters (then "…"); "" for
     * none.
     */
    public static String quoted(String s, int maxChars) {
        if (s == null) {
            return "";
        }
        String p = s.replaceAll("[\\r\\n\\t]+", " ").replaceAll("[^\\x20-\\x7e]", "?").strip();
        return p.length() > maxChars ? p.substring(0, maxChars) + "…" : p;
    }
}
