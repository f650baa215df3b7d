package io.dilu.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The metric list of a component's document — the table under its {@code ## Metrics} heading, one metric a row:
 * {@code | `name` | type | `label`, `label` | meaning |} — and what a Prometheus scrape really holds, so that a test
 * can hold the one to the other: the names as exported, with their types and labels.
 */
public final class DocumentedMetrics {

    /** One documented metric. */
    public record Metric(String name, String type, Set<String> labels) {}

    /** One exported metric family: its samples' name, the type its {@code # TYPE} line gives, its label names. */
    public record Exported(String name, String type, Set<String> labels) {}

    private static final Pattern CODE = Pattern.compile("`([^`]+)`");
    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{([^}]*)})? \\S+", Pattern.MULTILINE);
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");
    private static final Pattern TYPE = Pattern.compile("^# TYPE (\\S+) (\\S+)$", Pattern.MULTILINE);

    private DocumentedMetrics() {}

    /** The document of the repository's {@code docs/} named {@code file}. */
    public static Path doc(String file) {
        return RealApiServer.root().resolve("docs").resolve(file);
    }

    /** The rows of the table under the document's first heading that starts with {@code ## Metrics}. */
    public static List<Metric> of(Path doc) {
        return of(doc, "## Metrics");
    }

    /**
     * The metric rows (first cell a {@code `name`}) of the tables in the section under the document's first
     * heading that starts with {@code heading}, up to the next {@code ## } heading.
     */
    public static List<Metric> of(Path doc, String heading) {
        List<String> lines;
        try {
            lines = Files.readAllLines(doc);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Metric> out = new ArrayList<>();
        boolean inSection = false;
        for (String line : lines) {
            if (line.startsWith("## ")) {
                if (inSection) {
                    break;
                }
                inSection = line.startsWith(heading);
                continue;
            }
            if (!inSection || !line.startsWith("| `")) {
                continue;
            }
            String[] cells = line.split("\\|");
            // "", name, type, labels, meaning
            if (cells.length < 5) {
                throw new IllegalArgumentException(doc + ": a metric row needs name, type, labels, meaning: " + line);
            }
            Matcher name = CODE.matcher(cells[1]);
            if (!name.find()) {
                throw new IllegalArgumentException(doc + ": no `name` in " + line);
            }
            Set<String> labels = new TreeSet<>();
            Matcher l = CODE.matcher(cells[3]);
            while (l.find()) {
                labels.add(l.group(1));
            }
            out.add(new Metric(name.group(1), cells[2].strip().split("\\s+")[0], labels));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException(doc + " has no metric table under a \"" + heading + "\" heading");
        }
        return out;
    }

    /** The families of a scrape in the Prometheus text format, by the name their samples carry. */
    public static Map<String, Exported> exported(String scrape) {
        Map<String, String> types = new HashMap<>();
        Matcher t = TYPE.matcher(scrape);
        while (t.find()) {
            types.put(t.group(1), t.group(2));
        }
        Map<String, Set<String>> labels = new HashMap<>();
        Matcher s = SAMPLE.matcher(scrape);
        while (s.find()) {
            Set<String> names = labels.computeIfAbsent(s.group(1), k -> new LinkedHashSet<>());
            if (s.group(3) != null) {
                Matcher l = LABEL.matcher(s.group(3));
                while (l.find()) {
                    names.add(l.group(1));
                }
            }
        }
        Map<String, Exported> out = new HashMap<>();
        labels.forEach((name, l) -> {
            // The text format names a counter's family with or without _total, depending on the writer.
            String type = types.getOrDefault(name, types.get(name.replaceFirst("_total$", "")));
            out.put(name, new Exported(name, type, new TreeSet<>(l)));
        });
        return out;
    }

    /**
     * What differs between the document and the scrape, one line per difference; empty when every documented
     * metric is exported under that name, with that type and exactly those labels, and every exported metric
     * whose name starts with {@code prefix} is documented.
     */
    public static List<String> differences(List<Metric> documented, String scrape, String prefix) {
        Map<String, Exported> exported = exported(scrape);
        List<String> out = new ArrayList<>();
        Set<String> names = new TreeSet<>();
        for (Metric m : documented) {
            names.add(m.name());
            Exported e = exported.get(m.name());
            if (e == null) {
                out.add(m.name() + ": documented, not exported");
                continue;
            }
            if (!m.type().equals(e.type())) {
                out.add(m.name() + ": documented as " + m.type() + ", exported as " + e.type());
            }
            if (!m.labels().equals(e.labels())) {
                out.add(m.name() + ": documented labels " + m.labels() + ", exported " + e.labels());
            }
        }
        exported.keySet().stream().filter(n -> n.startsWith(prefix) && !names.contains(n)).sorted()
                .forEach(n -> out.add(n + ": exported, not documented"));
        return out;
    }
}
