package io.dilu.core.scaling;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What a revision's scaler of Dilu's class has learned that a new leader cannot read from the cluster: its {@link
 * FunctionHistory} (both trackers, both histograms) and until when the instances it parked stay ({@link
 * RevisionScaler.Lazy}). Everything else a tick decides from is read again (pods, rates, knobs) or refills within one
 * window; these take hours of a function's traffic to learn again.
 *
 * <p>Stored as a few lines of text ({@link #encode}); {@link #decode} reads them as input that may be corrupt or
 * hostile: every field is checked against its form and bounds, and a state with any problem is refused whole, so a
 * revision never decides from half of one.
 *
 * @param parkedUntil until when the instances parked stay, by the history's word at their release; empty for none
 */
public record LearnedHistory(FunctionHistory.Snapshot history, Optional<Instant> parkedUntil) {

    /** The form's version: the first line. A reader refuses any other, a new leader then learns from zero. */
    public static final int VERSION = 1;
    /**
     * The longest text read. Two histograms of {@link FunctionHistory#PARAMETERS}' 1,440 bins, every bin at its
     * highest count, take about 50,000 characters; an honest state is some hundreds.
     */
    public static final int MAX_CHARS = 64 * 1024;
    /**
     * How far a stored instant may lie after the reader's {@code now}: the old leader's clock may have stood a little
     * ahead of the new one's. Beyond it an instant is not a clock's but a corrupt state's.
     */
    public static final Duration CLOCK_SKEW = Duration.ofMinutes(5);
    /**
     * The latest a kept instance can be kept after its release: a histogram's whole range with the tail's margin, or
     * the fixed keep-alive when that is longer.
     */
    public static final Duration LONGEST_KEEP = max(Duration.ofMillis(Math.round(FunctionHistory.PARAMETERS.range()
            .toMillis() * (1 + FunctionHistory.PARAMETERS.margin()))), FunctionHistory.PARAMETERS.fallbackKeepAlive());
    /** Most gaps beyond a histogram's range believed: more than a function's gaps of a minute in 4,000 years. */
    public static final long MAX_OUT_OF_RANGE = Integer.MAX_VALUE;

    /** The state's lines, in the order written; each begins with its key. */
    enum Line {
        VERSION, PARKED_UNTIL, IDLE_TRACKER, IDLE, BURST_TRACKER, BURSTS;

        /** As written: lower case, words joined by '-'. */
        final String key = name().toLowerCase(Locale.ROOT).replace('_', '-');

        static Optional<Line> of(String key) {
            return Arrays.stream(values()).filter(l -> l.key.equals(key)).findFirst();
        }
    }

    private static final String KEYS = Arrays.stream(Line.values()).map(l -> l.key).collect(Collectors.joining(", "));
    private static final String NONE = "none";
    /** The most of a refused value quoted in a problem: a log line stays a line. */
    private static final int QUOTED = 80;

    public LearnedHistory {
        if (history == null || parkedUntil == null) {
            throw new IllegalArgumentException("history and parkedUntil must be given (parkedUntil empty for none)");
        }
    }

    /**
     * The state as lines of {@code key value}: {@code version 1}, {@code parked-until <ISO-8601 instant or none>},
     * {@code idle-tracker last-on=<instant or none> off=<true|false>}, {@code idle <histogram>}, and the same two for
     * the gaps between bursts ({@code burst-tracker}, {@code bursts}); a histogram as {@link GapHistogram#encode}
     * writes it.
     */
    public String encode() {
        Map<Line, String> lines = new EnumMap<>(Line.class);
        lines.put(Line.VERSION, Integer.toString(VERSION));
        lines.put(Line.PARKED_UNTIL, parkedUntil.map(Instant::toString).orElse(NONE));
        lines.put(Line.IDLE_TRACKER, encode(history.idleTracker()));
        lines.put(Line.IDLE, history.idle().encode());
        lines.put(Line.BURST_TRACKER, encode(history.burstTracker()));
        lines.put(Line.BURSTS, history.bursts().encode());
        StringBuilder text = new StringBuilder();
        lines.forEach((line, value) -> text.append(line.key).append(' ').append(value).append('\n'));
        return text.toString();
    }

    private static String encode(GapTracker.State s) {
        return "last-on=" + s.lastOn().map(Instant::toString).orElse(NONE) + " off=" + s.off();
    }

    /**
     * Reads {@link #encode}'s text, read at {@code now}: empty, with the problems added, when any line is missing,
     * repeated, unknown, malformed or out of bounds. Instants must lie between the epoch and {@code now} plus {@link
     * #CLOCK_SKEW} ({@code parked-until} plus {@link #LONGEST_KEEP} too); histograms must have {@link
     * FunctionHistory#PARAMETERS}' bin and range and at most {@link #MAX_OUT_OF_RANGE} gaps beyond it.
     */
    public static Optional<LearnedHistory> decode(String text, Instant now, List<FieldError> problems) {
        int before = problems.size();
        if (text == null || text.isBlank()) {
            problems.add(new FieldError("state", "''", "the lines LearnedHistory.encode writes"));
            return Optional.empty();
        }
        if (text.length() > MAX_CHARS) {
            problems.add(new FieldError("state", text.length() + " characters", "at most " + MAX_CHARS + " characters"));
            return Optional.empty();
        }
        Map<Line, String> lines = new EnumMap<>(Line.class);
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            int space = line.indexOf(' ');
            String key = space < 0 ? line : line.substring(0, space);
            String value = space < 0 ? "" : line.substring(space + 1);
            Optional<Line> known = Line.of(key);
            if (known.isEmpty()) {
                problems.add(new FieldError(quoted(key), quoted(value), "a line of " + KEYS));
            } else if (lines.putIfAbsent(known.get(), value) != null) {
                problems.add(new FieldError(key, quoted(value), "given once"));
            }
        }
        for (Line line : Line.values()) {
            if (!lines.containsKey(line)) {
                problems.add(new FieldError(line.key, "(missing)", "a line of the state"));
            }
        }
        if (problems.size() > before) {
            return Optional.empty();
        }
        if (!Integer.toString(VERSION).equals(lines.get(Line.VERSION))) {
            problems.add(new FieldError(Line.VERSION.key, quoted(lines.get(Line.VERSION)), Integer.toString(VERSION)));
            return Optional.empty(); // another version's lines may mean other things: read none of them
        }
        Instant latest = now.plus(CLOCK_SKEW);
        Optional<Optional<Instant>> parkedUntil = instantOrNone(Line.PARKED_UNTIL.key, lines.get(Line.PARKED_UNTIL),
                latest.plus(LONGEST_KEEP), problems);
        Optional<GapTracker.State> idleTracker = tracker(Line.IDLE_TRACKER, lines, latest, problems);
        Optional<GapHistogram> idle = histogram(Line.IDLE, lines, problems);
        Optional<GapTracker.State> burstTracker = tracker(Line.BURST_TRACKER, lines, latest, problems);
        Optional<GapHistogram> bursts = histogram(Line.BURSTS, lines, problems);
        if (problems.size() > before) {
            return Optional.empty();
        }
        return Optional.of(new LearnedHistory(new FunctionHistory.Snapshot(idleTracker.get(), idle.get(),
                burstTracker.get(), bursts.get()), parkedUntil.get()));
    }

    /** An instant in [epoch, latest] or {@code none}: present when read, the inner Optional empty for none. */
    private static Optional<Optional<Instant>> instantOrNone(String field, String text, Instant latest,
            List<FieldError> problems) {
        if (NONE.equals(text)) {
            return Optional.of(Optional.empty());
        }
        String allowed = "none or an ISO-8601 instant in " + Instant.EPOCH + ".." + latest;
        try {
            Instant t = Instant.parse(text);
            if (!t.isBefore(Instant.EPOCH) && !t.isAfter(latest)) {
                return Optional.of(Optional.of(t));
            }
        } catch (DateTimeParseException e) {
            // reported below
        }
        problems.add(new FieldError(field, quoted(text), allowed));
        return Optional.empty();
    }

    private static Optional<GapTracker.State> tracker(Line line, Map<Line, String> lines, Instant latest,
            List<FieldError> problems) {
        String field = line.key;
        String text = lines.get(line);
        String[] parts = text.split(" ", -1);
        if (parts.length != 2 || !parts[0].startsWith("last-on=") || !parts[1].startsWith("off=")) {
            problems.add(new FieldError(field, quoted(text), "'last-on=<ISO-8601 instant or none> off=<true|false>'"));
            return Optional.empty();
        }
        Optional<Optional<Instant>> lastOn = instantOrNone(field + " last-on", parts[0].substring(8), latest, problems);
        String off = parts[1].substring(4);
        if (!off.equals("true") && !off.equals("false")) {
            problems.add(new FieldError(field + " off", quoted(off), "true or false"));
            return Optional.empty();
        }
        if (lastOn.isEmpty()) {
            return Optional.empty();
        }
        if (off.equals("true") && lastOn.get().isEmpty()) {
            problems.add(new FieldError(field, quoted(text), "off=true only with a last-on instant (idle since when?)"));
            return Optional.empty();
        }
        return Optional.of(new GapTracker.State(lastOn.get(), off.equals("true")));
    }

    private static Optional<GapHistogram> histogram(Line line, Map<Line, String> lines, List<FieldError> problems) {
        String field = line.key;
        String text = lines.get(line);
        GapHistogram h;
        try {
            h = GapHistogram.decode(text);
        } catch (IllegalArgumentException | ArithmeticException e) { // a duration too long for nanoseconds overflows
            problems.add(new FieldError(field, quoted(text), "a histogram as GapHistogram.encode writes it (" + e.getMessage()
                    + ")"));
            return Optional.empty();
        }
        KeepAlive.Parameters p = FunctionHistory.PARAMETERS;
        if (!h.bin().equals(p.bin()) || !h.range().equals(p.range())) {
            problems.add(new FieldError(field, "bin=" + h.bin() + " range=" + h.range(), "bin=" + p.bin() + " range="
                    + p.range() + " (FunctionHistory.PARAMETERS)"));
            return Optional.empty();
        }
        if (h.outOfRange() > MAX_OUT_OF_RANGE) {
            problems.add(new FieldError(field + " out", Long.toString(h.outOfRange()), "0.." + MAX_OUT_OF_RANGE));
            return Optional.empty();
        }
        return Optional.of(h);
    }

    private static String quoted(String value) {
        String v = value == null ? "" : value;
        return "'" + (v.length() > QUOTED ? v.substring(0, QUOTED) + "…" : v) + "'";
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }
}
