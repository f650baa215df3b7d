package io.dilu.simulator;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * An event list: instances starting and stopping over time, as CSV with the header
 * {@code time_s,action,instance,function,type,gpus,sm_request,sm_limit,memory_gb}, one event per row in time
 * order. {@code action} is {@code start} or {@code stop}; a {@code stop} row needs only its time, action and
 * instance (the other cells may be empty). Shares are fractions of a GPU, memory is GB per GPU. Every bad row
 * is reported with its line number; one bad row rejects the file.
 */
public final class EventCsv {

    public static final String HEADER = "time_s,action,instance,function,type,gpus,sm_request,sm_limit,memory_gb";

    /** One row: an instance starts (with what it asks) or stops. */
    public sealed interface Event {
        double timeS();

        String instance();
    }

    public record Start(double timeS, SimInstance asked) implements Event {
        @Override
        public String instance() {
            return asked.id();
        }
    }

    public record Stop(double timeS, String instance) implements Event {}

    private EventCsv() {}

    public static List<Event> read(Reader source) throws IOException, InstanceCsv.InvalidCsvException {
        BufferedReader in = new BufferedReader(source);
        String header = in.readLine();
        if (header == null) {
            throw new InstanceCsv.InvalidCsvException(List.of("line 1: empty file, expected the header " + HEADER));
        }
        if (!header.strip().toLowerCase(Locale.ROOT).replace(" ", "").equals(HEADER)) {
            throw new InstanceCsv.InvalidCsvException(List.of("line 1: header is '" + header.strip() + "', expected " + HEADER));
        }
        List<String> problems = new ArrayList<>();
        List<Event> events = new ArrayList<>();
        Set<String> started = new HashSet<>();
        Set<String> stopped = new HashSet<>();
        double[] lastTime = {0};
        Cells.rows(in, (number, cells) -> {
            String prefix = "line " + number + ": ";
            if (cells.length != 9) {
                problems.add(prefix + cells.length + " columns, expected 9 (" + HEADER + ")");
                return;
            }
            List<String> row = new ArrayList<>();
            double time = Cells.number(cells[0], "time_s", 0, 1e9, false, prefix, row);
            if (!Double.isNaN(time) && time < lastTime[0]) {
                row.add(prefix + "time_s=" + cells[0].strip() + " is earlier than the row before (" + lastTime[0]
                        + "): rows must be in time order");
            }
            String action = cells[1].strip();
            String instance = cells[2].strip();
            if (instance.isEmpty()) {
                row.add(prefix + "instance is empty");
            }
            switch (action) {
                case "start" -> {
                    if (!instance.isEmpty() && !started.add(instance)) {
                        row.add(prefix + "instance " + instance + " starts a second time");
                    }
                    SimInstance asked = Cells.instance(instance, cells[3].strip().isEmpty() ? instance : cells[3].strip(),
                            cells[4], cells[5], cells[6], cells[7], cells[8], prefix, row);
                    if (row.isEmpty()) {
                        events.add(new Start(time, asked));
                    }
                }
                case "stop" -> {
                    if (!instance.isEmpty() && !started.contains(instance)) {
                        row.add(prefix + "instance " + instance + " stops before it started");
                    } else if (!instance.isEmpty() && !stopped.add(instance)) {
                        row.add(prefix + "instance " + instance + " stops a second time");
                    }
                    if (row.isEmpty()) {
                        events.add(new Stop(time, instance));
                    }
                }
                default -> row.add(prefix + "action='" + action + "' is not allowed: must be start or stop");
            }
            if (row.isEmpty()) {
                lastTime[0] = time;
            }
            problems.addAll(row);
        });
        if (!problems.isEmpty()) {
            throw new InstanceCsv.InvalidCsvException(problems);
        }
        if (events.isEmpty()) {
            throw new InstanceCsv.InvalidCsvException(List.of("no events: the file has a header and no rows"));
        }
        return events;
    }

    public static void write(Writer out, List<Event> events) throws IOException {
        out.write(HEADER + "\n");
        for (Event e : events) {
            switch (e) {
                case Start s -> {
                    SimInstance i = s.asked();
                    out.write(String.format(Locale.ROOT, "%.3f,start,%s,%s,%s,%d,%.4f,%.4f,%.3f%n", s.timeS(), i.id(),
                            i.function(), i.type().label(), i.gpus(), i.smRequest(), i.smLimit(), i.memoryMib() / 1024.0));
                }
                case Stop s -> out.write(String.format(Locale.ROOT, "%.3f,stop,%s,,,,,,%n", s.timeS(), s.instance()));
            }
        }
    }
}
